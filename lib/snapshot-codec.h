/* SPDX-License-Identifier: MIT */
/*
 * The snapshot format's building blocks (doc/snapshot-format.md): record
 * types and limits, CRC32C, LEB128 varints, and a bounds-checked cursor
 * for decoding a payload that has already passed its checksum.
 */
#ifndef PC_SNAPSHOT_CODEC_H
#define PC_SNAPSHOT_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* "\x89pagecache\r\n\x1a\n", then the format version as u16le. */
#define PC_SNAP_MAGIC "\x89pagecache\r\n\x1a\n"
#define PC_SNAP_MAGIC_LEN 14
#define PC_SNAP_PREAMBLE_LEN 16
#define PC_SNAP_VERSION 1

/* type u8, payload length u32le ... payload ... crc32c u32le */
#define PC_SNAP_REC_HEAD 5
#define PC_SNAP_REC_TAIL 4

enum {
	PC_SNAP_REC_HEADER = 'H',
	PC_SNAP_REC_FILE = 'F',
	PC_SNAP_REC_RUNS = 'R',
	PC_SNAP_REC_END = 'E',
};

/* Bounds. A reader refuses anything larger before allocating for it. */
#define PC_SNAP_PATH_MAX 4095      /* bytes of a relative path or the root */
#define PC_SNAP_GENERATOR_MAX 64   /* bytes of the generator string */
#define PC_SNAP_RUN_BYTES 65536    /* the writer starts a new record past this */
#define PC_SNAP_PAYLOAD_MAX (128 * 1024) /* any record's payload */
#define PC_SNAP_VARINT_MAX 10      /* bytes of a LEB128 u64 */

#define PC_SNAP_PAGE_SIZE_MIN 512
#define PC_SNAP_PAGE_SIZE_MAX (1u << 30)

/* CRC32C (Castagnoli), reflected, init and final xor ~0: crc32c("123456789")
 * is 0xe3069283. Chain with pc_crc32c(pc_crc32c(0, a, n), b, m). */
uint32_t pc_crc32c(uint32_t crc, const void *buf, size_t len);

/* Appends the LEB128 encoding of v at p (room for PC_SNAP_VARINT_MAX);
 * returns the bytes written. */
size_t pc_varint_put(uint8_t *p, uint64_t v);

static inline uint64_t pc_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t pc_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline void pc_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t pc_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* A read cursor over a verified payload. Every getter checks the bounds and
 * returns -EBADMSG with *what set to a short reason when the data is bad. */
struct pc_cursor {
	const uint8_t *p;
	size_t pos, len;
	const char *what;
};

int pc_cursor_varint(struct pc_cursor *c, uint64_t *v);
int pc_cursor_u8(struct pc_cursor *c, uint8_t *v);
/* n bytes in place: *bytes points into the payload. */
int pc_cursor_bytes(struct pc_cursor *c, uint64_t n, const uint8_t **bytes);

static inline size_t pc_cursor_left(const struct pc_cursor *c)
{
	return c->len - c->pos;
}

#endif
