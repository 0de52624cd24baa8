/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "bitmap.h"

uint64_t *pc_bitmap_new(uint64_t nbits)
{
	uint64_t words = (nbits + 63) / 64;

	if (words > SIZE_MAX / sizeof(uint64_t))
		return NULL;
	return calloc(words ? (size_t)words : 1, sizeof(uint64_t));
}

void pc_bitmap_set_range(uint64_t *bits, uint64_t start, uint64_t n)
{
	uint64_t end = start + n;

	while (start < end && start % 64) {
		pc_bitmap_set(bits, start);
		start++;
	}
	if (end - start >= 64) {
		uint64_t full = (end - start) / 64;

		memset(&bits[start / 64], 0xff, (size_t)full * sizeof(uint64_t));
		start += full * 64;
	}
	while (start < end) {
		pc_bitmap_set(bits, start);
		start++;
	}
}

/* Gather bit 0 of eight vector bytes into one byte, lowest address first. */
static inline unsigned int pack8(const unsigned char *v)
{
	uint64_t x;

	memcpy(&x, v, sizeof(x));
	x &= UINT64_C(0x0101010101010101);
	/* little-endian: byte k's bit 0 lands in bit 56 + k of the product */
	return (unsigned int)((x * UINT64_C(0x0102040810204080)) >> 56);
}

uint64_t pc_bitmap_from_vec(uint64_t *bits, uint64_t start, const unsigned char *vec,
			    uint64_t n)
{
	uint64_t i = 0, set = 0;

	while (i < n && (start + i) % 8) {
		if (vec[i] & 1) {
			pc_bitmap_set(bits, start + i);
			set++;
		}
		i++;
	}
	for (; i + 8 <= n; i += 8) {
		unsigned int byte = pack8(vec + i);
		uint64_t pos = start + i;

		if (byte) {
			bits[pos / 64] |= (uint64_t)byte << (pos % 64);
			set += (uint64_t)__builtin_popcount(byte);
		}
	}
	for (; i < n; i++) {
		if (vec[i] & 1) {
			pc_bitmap_set(bits, start + i);
			set++;
		}
	}
	return set;
}

uint64_t pc_bitmap_count(const uint64_t *bits, uint64_t nbits)
{
	uint64_t full = nbits / 64, count = 0;

	for (uint64_t w = 0; w < full; w++)
		count += (uint64_t)__builtin_popcountll(bits[w]);
	if (nbits % 64)
		count += (uint64_t)__builtin_popcountll(bits[full] &
							((UINT64_C(1) << (nbits % 64)) - 1));
	return count;
}

/* Index of the first bit at or after from whose value is want, or nbits. */
static uint64_t find_bit(const uint64_t *bits, uint64_t nbits, uint64_t from, int want)
{
	while (from < nbits) {
		uint64_t word = bits[from / 64];

		if (!want)
			word = ~word;
		word &= ~UINT64_C(0) << (from % 64);
		if (word) {
			uint64_t i = (from & ~UINT64_C(63)) + (uint64_t)__builtin_ctzll(word);

			return i < nbits ? i : nbits;
		}
		from = (from & ~UINT64_C(63)) + 64;
	}
	return nbits;
}

int pc_bitmap_next_run(const uint64_t *bits, uint64_t nbits, uint64_t from,
		       uint64_t *start, uint64_t *len)
{
	uint64_t s = find_bit(bits, nbits, from, 1);

	if (s >= nbits)
		return 0;
	*start = s;
	*len = find_bit(bits, nbits, s, 0) - s;
	return 1;
}
