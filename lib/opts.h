/* SPDX-License-Identifier: MIT */
/* Options blocks (libbpf's OPTS): a public struct whose first field is its
 * size as the caller compiled it, so that it can grow. */
#ifndef PC_OPTS_H
#define PC_OPTS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Copy the caller's block into dst (this library's layout, dst_size bytes):
 * fields the caller's older struct lacks read as zero, and bytes of a newer
 * caller's struct that this library does not know must be zero (-EINVAL
 * otherwise: the caller asked for something that would be ignored).
 * src NULL gives all zeros. dst's size field is set to dst_size.
 */
static inline int pc_opts_copy(void *dst, size_t dst_size, const void *src, size_t src_size)
{
	const uint8_t *s = src;

	memset(dst, 0, dst_size);
	if (src) {
		if (src_size < sizeof(size_t))
			return -EINVAL;
		for (size_t i = dst_size; i < src_size; i++)
			if (s[i])
				return -EINVAL;
		memcpy(dst, src, src_size < dst_size ? src_size : dst_size);
	}
	memcpy(dst, &dst_size, sizeof(dst_size));
	return 0;
}

/* Copy a result out into the caller's block of *(size_t *)dst bytes. */
static inline void pc_opts_out(void *dst, const void *src, size_t src_size)
{
	size_t dst_size;

	if (!dst)
		return;
	memcpy(&dst_size, dst, sizeof(dst_size));
	if (dst_size < sizeof(size_t))
		return;
	memcpy((uint8_t *)dst + sizeof(size_t), (const uint8_t *)src + sizeof(size_t),
	       (dst_size < src_size ? dst_size : src_size) - sizeof(size_t));
}

#endif
