/* SPDX-License-Identifier: MIT */
/* Memory the kernel fills behind valgrind's back (io_uring) is marked
 * defined, so memcheck's reports stay meaningful. No-op without valgrind. */
#ifndef PC_VALGRIND_COMPAT_H
#define PC_VALGRIND_COMPAT_H

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define PC_VALGRIND_MAKE_DEFINED(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#endif
#endif

#ifndef PC_VALGRIND_MAKE_DEFINED
#define PC_VALGRIND_MAKE_DEFINED(p, n) ((void)(p), (void)(n))
#endif

#endif
