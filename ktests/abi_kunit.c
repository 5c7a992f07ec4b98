// SPDX-License-Identifier: GPL-2.0
/*
 * tprof_abi: the ABI structs as the kernel compiler lays them out, which
 * must match what userspace sees (tests/unit/abi_test.cc pins the same).
 */
#include <kunit/test.h>
#include <linux/module.h>
#include <linux/stddef.h>
#include <linux/tprof.h>
#include <linux/tprof_unwind.h>

static void tprof_abi_struct_sizes_are_pinned(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_counters), (size_t)64);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_cpu_stats), (size_t)72);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_info), (size_t)176);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_metric), (size_t)16);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_metrics_config), (size_t)168);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_metrics_status), (size_t)192);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_thread_metrics), (size_t)104);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_thread_read), (size_t)128);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_drain), (size_t)64);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_self_read), (size_t)72);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_self_page), (size_t)144);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_sampling_config), (size_t)96);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_buffer_ctl), (size_t)64);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_buffer_release), (size_t)16);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_sampling_status), (size_t)80);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_rec_sample), (size_t)56);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_rec_stack), (size_t)8);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_rec_map), (size_t)56);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_rec_user_stack), (size_t)48);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_unwind_row), (size_t)16);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_unwind_load), (size_t)32);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_unwind_range), (size_t)32);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_unwind_space), (size_t)32);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_pmu_program), (size_t)1592);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_pmu_values), (size_t)256);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_pmu_event), (size_t)136);
	KUNIT_EXPECT_EQ(test, sizeof(struct tprof_pmu_subranges), (size_t)48);
}

static void tprof_abi_offsets_match_userspace(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, offsetof(struct tprof_info, features), (size_t)24);
	KUNIT_EXPECT_EQ(test, offsetof(struct tprof_info, total), (size_t)32);
	KUNIT_EXPECT_EQ(test, offsetof(struct tprof_info, cpu_stats), (size_t)96);
	KUNIT_EXPECT_EQ(test, offsetof(struct tprof_info, cpu_stats_count), (size_t)104);
	KUNIT_EXPECT_EQ(test, offsetof(struct tprof_info, resv), (size_t)112);
	KUNIT_EXPECT_EQ(test, offsetof(struct tprof_cpu_stats, counters), (size_t)8);
	KUNIT_EXPECT_EQ(test, offsetof(struct tprof_counters, resv), (size_t)40);
	KUNIT_EXPECT_EQ(test, offsetof(struct tprof_thread_metrics, identity), (size_t)8);
	KUNIT_EXPECT_EQ(test, offsetof(struct tprof_self_page, tsc_in), (size_t)40);
	KUNIT_EXPECT_EQ(test, offsetof(struct tprof_self_page, total), (size_t)48);
	KUNIT_EXPECT_EQ(test, offsetof(struct tprof_thread_metrics, values), (size_t)40);
	KUNIT_EXPECT_EQ(test, offsetof(struct tprof_thread_read, thread), (size_t)8);
	KUNIT_EXPECT_EQ(test, offsetof(struct tprof_drain, count), (size_t)16);
	KUNIT_EXPECT_EQ(test, offsetof(struct tprof_drain, untracked_threads), (size_t)24);
}

static void tprof_abi_ioctl_encodes_struct_size(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, _IOC_TYPE(TPROF_IOC_GET_INFO), (unsigned int)TPROF_IOC_MAGIC);
	KUNIT_EXPECT_EQ(test, _IOC_SIZE(TPROF_IOC_GET_INFO), (unsigned int)sizeof(struct tprof_info));
	KUNIT_EXPECT_EQ(test, _IOC_DIR(TPROF_IOC_GET_INFO), (unsigned int)(_IOC_READ | _IOC_WRITE));
}

static struct kunit_case tprof_abi_cases[] = {
	KUNIT_CASE(tprof_abi_struct_sizes_are_pinned),
	KUNIT_CASE(tprof_abi_offsets_match_userspace),
	KUNIT_CASE(tprof_abi_ioctl_encodes_struct_size),
	{}
};

static struct kunit_suite tprof_abi_suite = {
	.name = "tprof_abi",
	.test_cases = tprof_abi_cases,
};

kunit_test_suites(&tprof_abi_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit suites for tprof");
