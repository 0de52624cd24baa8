/* SPDX-License-Identifier: MIT */
/* Version, page size and the stable enum names. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pagecache/pagecache.h"

START_TEST(version_matches_macros)
{
	char expect[64];

	snprintf(expect, sizeof(expect), "%d.%d.%d", PAGECACHE_VERSION_MAJOR,
		 PAGECACHE_VERSION_MINOR, PAGECACHE_VERSION_MICRO);
	ck_assert_str_eq(pc_version(), expect);
}
END_TEST

START_TEST(page_size_is_the_kernels)
{
	ck_assert_int_eq(pc_page_size(), sysconf(_SC_PAGESIZE));
	ck_assert_int_gt(pc_page_size(), 0);
}
END_TEST

START_TEST(names_are_stable)
{
	ck_assert_str_eq(pc_mincore_mode_name(PC_MINCORE_FULL), "full");
	ck_assert_str_eq(pc_mincore_mode_name(PC_MINCORE_GATED_FAKED), "gated-faked");
	ck_assert_str_eq(pc_mincore_mode_name(PC_MINCORE_GATED_MAPPED), "gated-mapped");
	ck_assert_str_eq(pc_mincore_mode_name(PC_MINCORE_MAPPED_ONLY), "mapped-only");
	ck_assert_str_eq(pc_mincore_mode_name(PC_MINCORE_USELESS), "useless");
	ck_assert_str_eq(pc_mincore_mode_name(PC_MINCORE_UNKNOWN), "unknown");
	ck_assert_str_eq(pc_nowait_mode_name(PC_NOWAIT_CLEAN), "clean");
	ck_assert_str_eq(pc_nowait_mode_name(PC_NOWAIT_DESTRUCTIVE), "destructive");
	ck_assert_str_eq(pc_nowait_mode_name(PC_NOWAIT_UNSUPPORTED), "unsupported");
	ck_assert_str_eq(pc_nowait_mode_name(PC_NOWAIT_UNKNOWN), "unknown");
	ck_assert_str_eq(pc_cachestat_mode_name(PC_CACHESTAT_ABSENT), "absent");
	ck_assert_str_eq(pc_cachestat_mode_name(PC_CACHESTAT_BLOCKED), "blocked");
	ck_assert_str_eq(pc_cachestat_mode_name(PC_CACHESTAT_GATED), "gated");
	ck_assert_str_eq(pc_cachestat_mode_name(PC_CACHESTAT_OPEN), "open");
	ck_assert_str_eq(pc_quality_name(PC_QUALITY_EXACT), "exact");
	ck_assert_str_eq(pc_quality_name(PC_QUALITY_MAPPED), "mapped");
	ck_assert_str_eq(pc_source_name(PC_SOURCE_IO_URING), "io_uring");
	ck_assert_str_eq(pc_source_name(PC_SOURCE_CACHESTAT), "cachestat");
}
END_TEST

START_TEST(names_out_of_range_are_null)
{
	ck_assert_ptr_null(pc_mincore_mode_name(-1));
	ck_assert_ptr_null(pc_mincore_mode_name(PC_MINCORE_USELESS + 1));
	ck_assert_ptr_null(pc_nowait_mode_name(PC_NOWAIT_DESTRUCTIVE + 1));
	ck_assert_ptr_null(pc_cachestat_mode_name(PC_CACHESTAT_OPEN + 1));
	ck_assert_ptr_null(pc_quality_name(3));
	ck_assert_ptr_null(pc_source_name(PC_SOURCE_IO_URING + 1));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("basic");
	TCase *tc = tcase_create("basic");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, version_matches_macros);
	tcase_add_test(tc, page_size_is_the_kernels);
	tcase_add_test(tc, names_are_stable);
	tcase_add_test(tc, names_out_of_range_are_null);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
