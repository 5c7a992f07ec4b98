// kmod/core/counters.c compiled for userspace under ASan/UBSan: the same
// code the module runs.
#include "core/counters.h"

#include <gtest/gtest.h>

namespace {

TEST(CoreCounters, AddSumsEveryCounterAndLeavesReservedAlone) {
  tprof_counters total{};
  total.resv[0] = 7;
  tprof_counters cpu{1, 2, 3, 4, 5, {9, 9, 9}};
  tprof_counters_add(&total, &cpu);
  tprof_counters_add(&total, &cpu);
  EXPECT_EQ(total.context_switches, 2u);
  EXPECT_EQ(total.forks, 4u);
  EXPECT_EQ(total.execs, 6u);
  EXPECT_EQ(total.exits, 8u);
  EXPECT_EQ(total.frees, 10u);
  EXPECT_EQ(total.resv[0], 7u);
  EXPECT_EQ(total.resv[1], 0u);
}

TEST(CoreCounters, InfoInputAcceptsZeroedStructAndIgnoresOutputs) {
  tprof_info in{};
  EXPECT_EQ(tprof_info_check_input(&in), 0);
  in.abi_major = 5;  // output fields from a previous call are fine
  in.total.forks = 9;
  EXPECT_EQ(tprof_info_check_input(&in), 0);
  in.cpu_stats = 0x1000;
  in.cpu_stats_count = 4;
  EXPECT_EQ(tprof_info_check_input(&in), 0);
}

TEST(CoreCounters, InfoInputRejectsReservedFieldsAndHalfGivenArrays) {
  tprof_info in{};
  in.resv[7] = 1;
  EXPECT_EQ(tprof_info_check_input(&in), -EINVAL) << "nonzero resv must be refused";
  in = tprof_info{};
  in.__pad = 1;
  EXPECT_EQ(tprof_info_check_input(&in), -EINVAL) << "nonzero padding must be refused";
  in = tprof_info{};
  in.cpu_stats_count = 2;
  EXPECT_EQ(tprof_info_check_input(&in), -EINVAL) << "count without pointer";
  in = tprof_info{};
  in.cpu_stats = 0x1000;
  EXPECT_EQ(tprof_info_check_input(&in), -EINVAL) << "pointer without count";
}

TEST(CoreCounters, CpuStatsCountIsClampedToPossibleCpus) {
  EXPECT_EQ(tprof_info_cpu_stats_count(0, 4), 0u);
  EXPECT_EQ(tprof_info_cpu_stats_count(2, 4), 2u);
  EXPECT_EQ(tprof_info_cpu_stats_count(4, 4), 4u);
  EXPECT_EQ(tprof_info_cpu_stats_count(1000, 4), 4u);
}

}  // namespace
