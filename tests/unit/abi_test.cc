// The ABI header's layout: a change here is an ABI change, so every offset
// a 32- or 64-bit caller relies on is pinned.
#include <linux/tprof.h>
#include <linux/tprof_unwind.h>

#include <cstddef>

#include <gtest/gtest.h>

namespace {

TEST(Abi, StructSizesArePinned) {
  EXPECT_EQ(sizeof(tprof_counters), 64u);
  EXPECT_EQ(sizeof(tprof_cpu_stats), 72u);
  EXPECT_EQ(sizeof(tprof_info), 176u);
  EXPECT_EQ(sizeof(tprof_metric), 16u);
  EXPECT_EQ(sizeof(tprof_metrics_config), 168u);
  EXPECT_EQ(sizeof(tprof_metrics_status), 192u);
  EXPECT_EQ(sizeof(tprof_thread_metrics), 104u);
  EXPECT_EQ(sizeof(tprof_thread_read), 128u);
  EXPECT_EQ(sizeof(tprof_drain), 64u);
  EXPECT_EQ(sizeof(tprof_self_read), 72u);
  EXPECT_EQ(sizeof(tprof_self_page), 144u);
  EXPECT_EQ(sizeof(tprof_pmu_counter), 88u);
  EXPECT_EQ(sizeof(tprof_pmu_rule), 104u);
  EXPECT_EQ(sizeof(tprof_pmu_program), 1592u);
  EXPECT_EQ(sizeof(tprof_pmu_values), 256u);
  EXPECT_EQ(sizeof(tprof_pmu_event), 136u);
  EXPECT_EQ(sizeof(tprof_pmu_subranges), 48u);
  EXPECT_EQ(offsetof(tprof_pmu_program, counters), 24u);
  EXPECT_EQ(offsetof(tprof_pmu_event, values), 56u);
  EXPECT_EQ(offsetof(tprof_pmu_event, addr), 120u);  // 1.11, formerly resv[0]
}

TEST(Abi, SampleStacksKeepTheOldSampleLayout) {
  // ABI 1.8: the stack follows the 1.2 sample, so old readers skip it.
  EXPECT_EQ(sizeof(tprof_rec_sample), 56u);
  EXPECT_EQ(sizeof(tprof_rec_stack), 8u);
  EXPECT_EQ(offsetof(tprof_sampling_config, stack_depth), 20u);
  EXPECT_EQ(offsetof(tprof_sampling_config, cpus), 64u) << "ABI 1.16, in the old resv[0]";
  EXPECT_EQ(offsetof(tprof_sampling_config, cpus_bytes), 72u);
  EXPECT_EQ(sizeof(tprof_sampling_config), 96u);
  const size_t largest = sizeof(tprof_rec_sample) + sizeof(tprof_rec_stack) +
                         (TPROF_MAX_STACK_DEPTH + 2) * sizeof(__u64);
  EXPECT_EQ(largest % 8, 0u);
  EXPECT_LT(largest, size_t(TPROF_SAMPLING_MIN_HALF_BYTES)) << "a stack record must fit in a half";
  EXPECT_EQ(TPROF_SAMPLING_STACKS & TPROF_SAMPLING_CALLERS, 0u);
}

TEST(Abi, UserStackCopiesFitAQuarterHalf) {
  // ABI 1.18: user_stack_bytes is the old __pad2; the copy follows the frames.
  EXPECT_EQ(offsetof(tprof_sampling_config, user_stack_bytes), 76u);
  EXPECT_EQ(sizeof(tprof_rec_user_stack), 48u);
  EXPECT_EQ(sizeof(tprof_rec_user_stack) % 8, 0u);
  EXPECT_EQ(TPROF_MAX_USER_STACK_BYTES % 8, 0);
  EXPECT_EQ(TPROF_SAMPLING_USER_STACK & (TPROF_SAMPLING_STACKS | TPROF_SAMPLING_CALLERS), 0u);
  EXPECT_EQ(TPROF_SAMPLE_USER_STACK & TPROF_SAMPLE_STACK, 0u);
  EXPECT_EQ(sizeof(tprof_unwind_row), 16u);
}

TEST(Abi, UnwindTableIoctls) {
  // ABI 1.19: the flags are new bits; the structs are 8-byte multiples.
  EXPECT_EQ(TPROF_SAMPLING_USER_CFI &
                (TPROF_SAMPLING_USER_STACK | TPROF_SAMPLING_STACKS | TPROF_SAMPLING_CALLERS),
            0u);
  EXPECT_EQ(sizeof(tprof_unwind_load), 32u);
  EXPECT_EQ(offsetof(tprof_unwind_load, table_id), 12u);
  EXPECT_EQ(sizeof(tprof_unwind_range), 32u);
  EXPECT_EQ(offsetof(tprof_unwind_range, table_id), 24u);
  EXPECT_EQ(sizeof(tprof_unwind_space), 32u);
  EXPECT_EQ(offsetof(tprof_unwind_space, nr_ranges), 16u);
  EXPECT_EQ(_IOC_NR(TPROF_IOC_UNWIND_LOAD), 0x26u);
  EXPECT_EQ(_IOC_NR(TPROF_IOC_UNWIND_SPACE), 0x27u);
  EXPECT_EQ(TPROF_STACK_USER_CFI | TPROF_STACK_USER_WHOLE | TPROF_STACK_USER_UNCOVERED |
                TPROF_STACK_USER_BY_FP,
            0x78u);
}

TEST(Abi, SelfPageOffsetsArePinned) {
  EXPECT_EQ(offsetof(tprof_self_page, identity), 8u);
  EXPECT_EQ(offsetof(tprof_self_page, tid), 16u);
  EXPECT_EQ(offsetof(tprof_self_page, time_index), 24u);
  EXPECT_EQ(offsetof(tprof_self_page, tsc_mult), 32u);
  EXPECT_EQ(offsetof(tprof_self_page, tsc_in), 40u);
  EXPECT_EQ(offsetof(tprof_self_page, total), 48u);
  EXPECT_EQ(TPROF_SELF_PAGE_OFFSET % 65536, 0u) << "a page offset on every page size";
}

TEST(Abi, ThreadMetricsOffsetsArePinned) {
  EXPECT_EQ(offsetof(tprof_thread_metrics, identity), 8u);
  EXPECT_EQ(offsetof(tprof_thread_metrics, comm), 24u);
  EXPECT_EQ(offsetof(tprof_thread_metrics, values), 40u);
  EXPECT_EQ(offsetof(tprof_thread_read, thread), 8u);
  EXPECT_EQ(offsetof(tprof_drain, count), 16u);
  EXPECT_EQ(offsetof(tprof_drain, untracked_threads), 24u);
  EXPECT_EQ(offsetof(tprof_metrics_status, table_capacity), 136u);
}

TEST(Abi, MetricIoctlsHaveDistinctNumbersAndEncodeSizes) {
  EXPECT_EQ(_IOC_SIZE(TPROF_IOC_METRICS_ENABLE), sizeof(tprof_metrics_config));
  EXPECT_EQ(_IOC_SIZE(TPROF_IOC_METRICS_STATUS), sizeof(tprof_metrics_status));
  EXPECT_EQ(_IOC_SIZE(TPROF_IOC_THREAD_READ), sizeof(tprof_thread_read));
  EXPECT_EQ(_IOC_SIZE(TPROF_IOC_DRAIN), sizeof(tprof_drain));
  EXPECT_EQ(_IOC_DIR(TPROF_IOC_METRICS_DISABLE), unsigned(_IOC_NONE));
}

TEST(Abi, FieldsAreNaturallyAlignedWithExplicitPadding) {
  EXPECT_EQ(offsetof(tprof_info, features), 24u);
  EXPECT_EQ(offsetof(tprof_info, total), 32u);
  EXPECT_EQ(offsetof(tprof_info, cpu_stats), 96u);
  EXPECT_EQ(offsetof(tprof_info, cpu_stats_count), 104u);
  EXPECT_EQ(offsetof(tprof_info, resv), 112u);
  EXPECT_EQ(offsetof(tprof_cpu_stats, counters), 8u);
  EXPECT_EQ(offsetof(tprof_counters, resv), 40u);
  EXPECT_EQ(alignof(tprof_info), 8u);
}

TEST(Abi, IoctlNumberEncodesMagicSizeAndDirection) {
  EXPECT_EQ(_IOC_TYPE(TPROF_IOC_GET_INFO), TPROF_IOC_MAGIC);
  EXPECT_EQ(_IOC_NR(TPROF_IOC_GET_INFO), 0u);
  EXPECT_EQ(_IOC_SIZE(TPROF_IOC_GET_INFO), sizeof(tprof_info));
  EXPECT_EQ(_IOC_DIR(TPROF_IOC_GET_INFO), unsigned(_IOC_READ | _IOC_WRITE));
}

TEST(Abi, VersionMacrosUnpackModuleVersion) {
  const unsigned v = (2u << 16) | (7u << 8) | 3u;
  EXPECT_EQ(TPROF_VERSION_MAJOR(v), 2u);
  EXPECT_EQ(TPROF_VERSION_MINOR(v), 7u);
  EXPECT_EQ(TPROF_ABI_MINOR, 22) << "1.22: stacks counted in the module";
  EXPECT_EQ(sizeof(tprof_rec_idle), 32u);
  EXPECT_EQ(TPROF_UNWIND_CFA_MAX, TPROF_UNWIND_CFA_SIGNAL);
  EXPECT_EQ(TPROF_PMU_CTR_FLAGS, 0x3fu) << "TPROF_PMU_CTR_COUNT is bit 5";
  EXPECT_EQ(TPROF_VERSION_PATCH(v), 3u);
}

}  // namespace
