/* SPDX-License-Identifier: MIT */
#include <unistd.h>

#include "pc-private.h"

#define PC_STR2(x) #x
#define PC_STR(x) PC_STR2(x)

PC_EXPORT const char *pc_version(void)
{
	return PC_STR(PAGECACHE_VERSION_MAJOR) "." PC_STR(PAGECACHE_VERSION_MINOR) "." PC_STR(
		PAGECACHE_VERSION_MICRO);
}

PC_EXPORT long pc_page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}
