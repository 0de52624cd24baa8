/* SPDX-License-Identifier: MIT */
/* One bit per page: allocation, filling from mincore vectors, runs. */
#ifndef PC_BITMAP_H
#define PC_BITMAP_H

#include <stddef.h>
#include <stdint.h>

static inline size_t pc_bitmap_words(uint64_t nbits)
{
	return (size_t)((nbits + 63) / 64);
}

/* Zeroed bitmap of nbits, or NULL (also when nbits does not fit in memory). */
uint64_t *pc_bitmap_new(uint64_t nbits);

static inline int pc_bitmap_test(const uint64_t *bits, uint64_t i)
{
	return (int)((bits[i / 64] >> (i % 64)) & 1);
}

static inline void pc_bitmap_set(uint64_t *bits, uint64_t i)
{
	bits[i / 64] |= UINT64_C(1) << (i % 64);
}

/* Set bits [start, start + n). */
void pc_bitmap_set_range(uint64_t *bits, uint64_t start, uint64_t n);

/* Set bit start + i for each vec[i] with bit 0 set (a mincore vector);
 * returns how many were set. */
uint64_t pc_bitmap_from_vec(uint64_t *bits, uint64_t start, const unsigned char *vec,
			    uint64_t n);

/* Number of set bits in [0, nbits). */
uint64_t pc_bitmap_count(const uint64_t *bits, uint64_t nbits);

/* The first run of set bits at or after from, below nbits: 1 and *start,
 * *len; 0 when none. */
int pc_bitmap_next_run(const uint64_t *bits, uint64_t nbits, uint64_t from,
		       uint64_t *start, uint64_t *len);

#endif
