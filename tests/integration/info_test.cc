// GET_INFO against the real module: versions, CPUs, and counters that move
// when the guest switches, forks and execs.
#include <linux/tprof.h>
#include <sys/sysinfo.h>

#include <gtest/gtest.h>

#include "guest_env.h"

namespace tprof::test {
namespace {

TEST(GetInfo, ReportsTheAbiAndModuleVersionOfThisTree) {
  Device dev = OpenDeviceOrFail();
  Info info = GetInfoOrFail(dev);
  EXPECT_EQ(info.abi_major, unsigned(TPROF_ABI_MAJOR));
  EXPECT_EQ(info.abi_minor, unsigned(TPROF_ABI_MINOR));
  EXPECT_EQ(info.ModuleVersionString(), TPROF_VERSION);
  EXPECT_EQ(info.state, unsigned(TPROF_STATE_IDLE));
  // Every feature of this tree, each with its bit (ABI 1.17).
  const uint64_t all = TPROF_FEAT_SCHED_COUNTERS | TPROF_FEAT_THREAD_METRICS |
                       TPROF_FEAT_SAMPLING | TPROF_FEAT_WINDOWS | TPROF_FEAT_SELF_PAGE |
                       TPROF_FEAT_PMU_PROGRAMS | TPROF_FEAT_THREAD_TOTALS |
                       TPROF_FEAT_PMU_SUBSCRIBE_REPLY | TPROF_FEAT_PMU_WIDE_WATCHPOINTS |
                       TPROF_FEAT_PMU_DATA_RANGES | TPROF_FEAT_EXEC_TRANSITION |
                       TPROF_FEAT_INDEX_REHASHES | TPROF_FEAT_PMU_COUNTS_ONLY |
                       TPROF_FEAT_PMU_COUNTS_ONLY_CPUS | TPROF_FEAT_SAMPLING_CPUS |
                       TPROF_FEAT_SAMPLING_USER_STACK | TPROF_FEAT_UNWIND_TABLES |
                       TPROF_FEAT_UNWIND_SIGNAL_FRAMES | TPROF_FEAT_SAMPLING_TICK |
                       TPROF_FEAT_SAMPLING_AGGREGATE | TPROF_FEAT_SAMPLING_AGGREGATE_STACKS;
  EXPECT_EQ(info.features, all) << std::hex << info.features;
}

TEST(GetInfo, CpuCountsMatchWhatTheKernelShowsUserspace) {
  Device dev = OpenDeviceOrFail();
  Info info = GetInfoOrFail(dev);
  EXPECT_EQ(info.nr_online_cpus, unsigned(get_nprocs()));
  EXPECT_GE(info.nr_cpu_ids, info.nr_online_cpus);
  ASSERT_EQ(info.cpus.size(), info.nr_cpu_ids);
  unsigned online = 0;
  for (size_t i = 0; i < info.cpus.size(); ++i) {
    EXPECT_EQ(info.cpus[i].cpu, i);
    online += info.cpus[i].online;
  }
  EXPECT_EQ(online, info.nr_online_cpus);
}

TEST(GetInfo, EveryOnlineCpuHasSwitchedAndTotalIsTheSumOfCpus) {
  Device dev = OpenDeviceOrFail();
  Info info = GetInfoOrFail(dev);
  tprof_counters sum{};
  for (const CpuStats& cpu : info.cpus) {
    if (cpu.online) {
      EXPECT_GT(cpu.counters.context_switches, 0u) << "cpu " << cpu.cpu;
    }
    sum.context_switches += cpu.counters.context_switches;
    sum.forks += cpu.counters.forks;
  }
  // The per-CPU array is read after the total, so it can only be ahead.
  EXPECT_GT(info.total.context_switches, 0u);
  EXPECT_GE(sum.context_switches, info.total.context_switches);
  EXPECT_GE(sum.forks, info.total.forks);
}

TEST(GetInfo, ForkExecAndExitAreCounted) {
  Device dev = OpenDeviceOrFail();
  Info before = GetInfoOrFail(dev);
  constexpr int kChildren = 5;
  for (int i = 0; i < kChildren; ++i) ForkExecTrue();
  Info after = GetInfoOrFail(dev);
  EXPECT_GE(after.total.forks - before.total.forks, uint64_t(kChildren));
  EXPECT_GE(after.total.execs - before.total.execs, uint64_t(kChildren));
  EXPECT_GE(after.total.exits - before.total.exits, uint64_t(kChildren));
  EXPECT_GT(after.total.context_switches, before.total.context_switches);
}

}  // namespace
}  // namespace tprof::test
