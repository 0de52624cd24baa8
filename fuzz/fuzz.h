/* SPDX-License-Identifier: MIT */
/*
 * The fuzz drivers (fuzz/fuzz-*.c). Each driver takes one input, runs it
 * through a parser of untrusted data and checks what the parser answered
 * against its documented contract; a broken promise aborts with a message,
 * which libFuzzer reports as a crash, as ASan and UBSan do for memory and
 * undefined behaviour. The same drivers replay the corpora in the ordinary
 * build (tests/test-fuzz-corpus.c, compiled with PC_FUZZ_REPLAY: no
 * libFuzzer entry point), so a regression input fails plain `meson test`
 * and the valgrind run too.
 */
#ifndef PC_FUZZ_H
#define PC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Abort when a promise is broken: the message says which one. */
#define FUZZ_CHECK(cond)                                                              \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__,   \
				__LINE__, #cond);                                     \
			abort();                                                      \
		}                                                                     \
	} while (0)

/*
 * fuzz-snapshot: the native snapshot reader over the input, as it is and
 * again with every record's CRC32C recomputed (so mutations reach the
 * decoder behind the checksum). Returns the first walk's result: 0 when
 * the input is a whole valid snapshot, else the reader's -errno
 * (-EBADMSG or -EPROTONOSUPPORT).
 */
int pc_fuzz_snapshot(const uint8_t *data, size_t size);

/*
 * The input with each record's checksum recomputed where its framing
 * allows (a malloc'ed copy in *out, size bytes). Returns how many were
 * changed, or -ENOMEM.
 */
int pc_fuzz_fix_crcs(const uint8_t *data, size_t size, uint8_t **out);

/* fuzz-path-check: pc_snapshot_path_check() against an independent
 * reading of its contract. Returns what pc_snapshot_path_check said. */
int pc_fuzz_path_check(const uint8_t *data, size_t size);

/* fuzz-cli-text: the pagecache command's untrusted-text handling: the JSON
 * string escaper, the terminal path escaper, the UTF-8 validator, base64,
 * and the size and number parsers. Returns 0. */
int pc_fuzz_cli_text(const uint8_t *data, size_t size);

/*
 * fuzz-happycache: the happycache-format reader (tools/pagecache/happycache.c)
 * against a reference reading of the format, on the rest of the input as
 * a file (first byte even: the gzip layer) or as text the driver gzips
 * (odd; with bit 1, starting (byte >> 2) bytes before the reader's buffer
 * boundary). Returns the walk's answer: 0 for a whole valid input, else
 * -EBADMSG.
 */
int pc_fuzz_happycache(const uint8_t *data, size_t size);

/* The file the reader gets for that input, malloc'ed in *out: the rest of
 * the input as it is (returns 0) or its text gzip'ed (returns 1). */
int pc_fuzz_happycache_file(const uint8_t *data, size_t size, uint8_t **out, size_t *out_len);

#endif
