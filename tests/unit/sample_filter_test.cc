// Selecting samples by thread, CPU, process name and time: the option
// parsers and FilterProfile on a synthetic profile whose every count is
// known, so each filter's result is checked exactly.
#include "tprof/analysis/sample_filter.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "../common/records.h"
#include "tprof/analysis/profile_file.h"
#include "tprof/output/report.h"
#include "tprof/analysis/symbolizer.h"

namespace {

using tprof::FilterProfile;
using tprof::Profile;
using tprof::ProfileBuilder;
using tprof::SampleFilter;
using tprof::SampleKey;
using tprof::test::CommRec;
using tprof::test::Records;
using tprof::test::SampleRec;

constexpr uint32_t U = TPROF_SAMPLE_USER;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kStart = 1000 * kMs;  // the first sample's time

tprof_rec_sample At(tprof_rec_sample s, uint32_t tid, uint64_t time_ns) {
  s.tid = tid;
  s.time_ns = time_ns;
  return s;
}

// pid 10 "alpha": thread 10 spins at 0x1000 on cpu 0, 40 samples, one per
// ms from kStart; thread 11 at 0x2000 (caller 0x2100) on cpu 1, 30 samples,
// one per ms from kStart + 50 ms. pid 20 "beta": thread 20 at 0x3000 with a
// stack, 20 samples alternating cpus 0 and 1, from kStart + 20 ms. Idle: 10
// on cpu 1 at kStart + 5 ms. Lost: 7 on cpu 0. 10 ms buckets.
Profile TestProfile() {
  ProfileBuilder b;
  Records r;
  r.Add(CommRec(10, TPROF_COMM_EXISTING, "alpha")).Add(CommRec(20, TPROF_COMM_EXISTING, "beta"));
  for (uint64_t i = 0; i < 40; ++i) r.Add(At(SampleRec(10, 1, 0x1000, U, 0), 10, kStart + i * kMs));
  for (uint64_t i = 0; i < 30; ++i)
    r.Add(At(SampleRec(10, 1, 0x2000, U, 1, 0x2100), 11, kStart + (50 + i) * kMs));
  for (uint32_t i = 0; i < 20; ++i)
    r.StackSample(At(SampleRec(20, 2, 0x3000, U, i % 2), 20, kStart + (20 + i) * kMs), 0, {},
                  {0x3100, 0x3200});
  for (int i = 0; i < 10; ++i)
    r.Add(At(SampleRec(0, 0, 0xffffffff81000310, TPROF_SAMPLE_IDLE, 1), 0, kStart + 5 * kMs));
  b.AddRecords(r.data(), r.size());
  b.SetCpuTotals(0, 40 + 10 + 7, 7, 0);
  b.SetCpuTotals(1, 30 + 10 + 10, 0, 0);
  return b.Finish();
}

const SampleKey kA{10, 1, 0x1000, U}, kB{10, 1, 0x2000, U}, kC{20, 2, 0x3000, U};

Profile Filtered(const Profile& p, const SampleFilter& f) {
  auto out = FilterProfile(p, f);
  EXPECT_TRUE(out) << out.error().message();
  return out ? *out : Profile{};
}

TEST(ParseIdList, TakesNumbersAndRangesSortedOnce) {
  auto ids = tprof::ParseIdList("7,0-3,2");
  ASSERT_TRUE(ids) << ids.error().message();
  EXPECT_EQ(*ids, (std::vector<uint32_t>{0, 1, 2, 3, 7}));
  for (const char* bad : {"", "1,", "a", "3-1", "-2", "1-", "4294967296", "0-4000000000"}) {
    auto r = tprof::ParseIdList(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code().value(), EINVAL);
  }
}

TEST(ParseTimeRange, ReadsRelativeSecondsUnitsAndAbsoluteNanoseconds) {
  SampleFilter f;
  ASSERT_TRUE(tprof::ParseTimeRange("0.5,1.25", &f));
  EXPECT_EQ(f.start, (tprof::TimeBound{500 * kMs, false}));
  EXPECT_EQ(f.end, (tprof::TimeBound{1250 * kMs, false}));
  ASSERT_TRUE(tprof::ParseTimeRange("250ms,", &f));
  EXPECT_EQ(f.start, (tprof::TimeBound{250 * kMs, false}));
  EXPECT_FALSE(f.end);
  ASSERT_TRUE(tprof::ParseTimeRange(",@123456789", &f));
  EXPECT_FALSE(f.start);
  EXPECT_EQ(f.end, (tprof::TimeBound{123456789, true}));
  ASSERT_TRUE(tprof::ParseTimeRange("@2s,3us", &f));
  EXPECT_EQ(f.start, (tprof::TimeBound{2'000'000'000, true}));
  EXPECT_EQ(f.end, (tprof::TimeBound{3000, false}));
  EXPECT_EQ(f.Describe(), "time [@2000000000 ns, 0.000003 s)");
  for (const char* bad : {"", "1", "1,2,3", "x,1", "1.5.2,", "2,1", "1h,", "@,"}) {
    SampleFilter g;
    tprof::Status st = tprof::ParseTimeRange(bad, &g);
    ASSERT_FALSE(st) << bad;
    EXPECT_EQ(st.error().code().value(), EINVAL);
  }
}

TEST(FilterProfile, ByThreadKeepsExactlyThatThreadsSamplesCallersAndStacks) {
  const Profile p = TestProfile();
  ASSERT_EQ(p.TotalSamples(), 100u);
  SampleFilter f;
  f.tids = {11};
  Profile t = Filtered(p, f);
  EXPECT_EQ(t.TotalSamples(), 30u);
  EXPECT_EQ(t.samples, (std::map<SampleKey, uint64_t>{{kB, 30}}));
  EXPECT_EQ(t.caller_edges, (std::map<tprof::CallerKey, uint64_t>{{{kB, 0x2100}, 30}}));
  EXPECT_TRUE(t.stack_samples.empty());
  EXPECT_EQ(t.cpus[1].samples, 30u);
  EXPECT_EQ(t.cpus[0].samples, 0u);
  EXPECT_EQ(t.TotalLostSamples(), 0u) << "a thread's share of the losses is unknown";
  EXPECT_NE(t.attributes["filter"].find("tid 11"), std::string::npos);
  EXPECT_NE(t.attributes["filter"].find("7 lost samples left out"), std::string::npos)
      << t.attributes["filter"];

  f.tids = {20, 10};
  Profile two = Filtered(p, f);
  EXPECT_EQ(two.TotalSamples(), 60u);
  EXPECT_EQ((two.stack_samples[{kC, 1}]), 20u) << "stack samples are rebuilt";
  tprof::Symbolizer sym(two);
  EXPECT_EQ(tprof::FoldedStackRows(two, sym, {}).size(), 2u) << "the reports read the result";
}

TEST(FilterProfile, ByCpuPartitionsTheSamplesAndKeepsThoseCpusLosses) {
  const Profile p = TestProfile();
  uint64_t sum = 0;
  for (uint32_t cpu : {0u, 1u}) {
    SampleFilter f;
    f.cpus = {cpu};
    Profile c = Filtered(p, f);
    EXPECT_EQ(c.cpus.size(), 1u);
    EXPECT_EQ(c.TotalSamples(), 50u) << "cpu " << cpu;
    EXPECT_EQ(c.TotalLostSamples(), cpu == 0 ? 7u : 0u) << "cpu " << cpu;
    EXPECT_EQ(c.cpus[cpu].samples_taken, c.TotalSamples() + c.TotalLostSamples());
    sum += c.TotalSamples();
  }
  EXPECT_EQ(sum, p.TotalSamples());
  SampleFilter f;
  f.cpus = {0};
  EXPECT_EQ((Filtered(p, f).samples[kC]), 10u);
}

TEST(FilterProfile, ByTimeAdjacentWindowsPartitionTheSamplesByBucket) {
  const Profile p = TestProfile();
  SampleFilter first, second;
  ASSERT_TRUE(tprof::ParseTimeRange("0,35ms", &first));   // buckets 0-2 (35 ms rounds down to 30)
  ASSERT_TRUE(tprof::ParseTimeRange("35ms,", &second));
  Profile a = Filtered(p, first), b = Filtered(p, second);
  EXPECT_EQ(a.TotalSamples() + b.TotalSamples(), p.TotalSamples());
  EXPECT_EQ(a.samples[kA], 30u);
  EXPECT_EQ(a.samples[kC], 10u) << "beta's samples from 20 to 29 ms";
  EXPECT_EQ(a.samples.count(kB), 0u);
  EXPECT_EQ(b.samples[kA], 10u);
  EXPECT_EQ(b.samples[kB], 30u);
  EXPECT_EQ(a.first_time_ns, p.first_time_ns);
  EXPECT_EQ(a.last_time_ns, kStart + 30 * kMs - 1);
  EXPECT_EQ(b.first_time_ns, kStart + 30 * kMs);

  SampleFilter abs;
  ASSERT_TRUE(tprof::ParseTimeRange("@" + std::to_string(kStart + 50 * kMs) + ",", &abs));
  EXPECT_EQ(Filtered(p, abs).TotalSamples(), 30u) << "thread 11 only: from 50 ms on";
}

TEST(FilterProfile, ByCommSelectsProcessesByTheReportsNamesEvenWithoutContext) {
  Profile p = TestProfile();
  SampleFilter f;
  f.comms = {"beta", "idle"};
  Profile c = Filtered(p, f);
  EXPECT_EQ(c.TotalSamples(), 30u);
  EXPECT_EQ(c.samples[kC], 20u);

  p.contexts.clear();
  p.context_granularity_ns = 0;  // as a 1.1 file
  Profile old = Filtered(p, f);
  EXPECT_EQ(old.TotalSamples(), 30u);
  EXPECT_EQ((old.stack_samples[{kC, 1}]), 20u);
}

TEST(FilterProfile, FiltersCombineAndAskingForMissingContextIsEnodata) {
  Profile p = TestProfile();
  SampleFilter f;
  f.comms = {"alpha"};
  f.cpus = {0};
  ASSERT_TRUE(tprof::ParseTimeRange("0,20ms", &f));
  Profile c = Filtered(p, f);
  EXPECT_EQ(c.samples, (std::map<SampleKey, uint64_t>{{kA, 20}}));
  EXPECT_EQ(c.attributes["filter"].rfind("cpu 0; comm alpha; time [0 s, 0.02 s)", 0), 0u)
      << c.attributes["filter"];
  // The result survives the file, and filters again.
  auto back = tprof::ParseProfile(tprof::SerializeProfile(c), "filtered");
  ASSERT_TRUE(back) << back.error().message();
  SampleFilter again;
  again.tids = {10};
  EXPECT_EQ(Filtered(*back, again).TotalSamples(), 20u);

  p.contexts.clear();
  p.context_granularity_ns = 0;
  for (SampleFilter g : {SampleFilter{.tids = {10}}, SampleFilter{.cpus = {0}},
                         SampleFilter{.start = tprof::TimeBound{1, false}}}) {
    auto r = FilterProfile(p, g);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code().value(), ENODATA);
  }
  EXPECT_TRUE(FilterProfile(p, {})) << "no filter needs nothing";
}

// A filter that chose nothing is answered with what it could have chosen,
// in its own terms: tprofctl prints this instead of an empty report.
TEST(DescribeSelectable, NamesWhatEachSelectorCouldHaveChosen) {
  const Profile p = TestProfile();
  SampleFilter f;
  f.comms = {"gamma"};
  f.tids = {99};
  EXPECT_TRUE(Filtered(p, f).samples.empty());
  EXPECT_EQ(tprof::DescribeSelectable(p, f),
            "the sampled threads: 0,10-11,20; the processes: alpha, beta, idle");
  SampleFilter t;
  ASSERT_TRUE(tprof::ParseTimeRange("100,200", &t));
  t.cpus = {5};
  EXPECT_TRUE(Filtered(p, t).samples.empty());
  // The last sample is at kStart + 79 ms.
  EXPECT_EQ(tprof::DescribeSelectable(p, t),
            "the sampled CPUs: 0-1; the samples span 0 to 0.08 s (@1000000000 to @1079000000 ns "
            "on the sampling clock)");
}

TEST(Report, ByThreadAndByCpuCountEachThreadsAndCpusSamples) {
  const Profile p = TestProfile();
  tprof::Symbolizer sym(p);
  tprof::ReportData d = tprof::BuildReport(p, sym, {.by = tprof::ReportBy::kThread});
  ASSERT_TRUE(d.has_context);
  ASSERT_EQ(d.threads.size(), 4u);
  EXPECT_EQ(d.threads[0].tid, 10u);
  EXPECT_EQ(d.threads[0].samples, 40u);
  EXPECT_EQ(d.threads[1].tid, 11u);
  EXPECT_EQ(d.threads[1].pid, 10u);
  EXPECT_EQ(d.threads[1].name, "alpha");
  EXPECT_EQ(d.threads[1].samples, 30u);
  EXPECT_EQ(d.threads[2].tid, 20u);
  EXPECT_EQ(d.threads[3].name, "idle");
  const std::string text =
      tprof::RenderReport(p, sym, {.by = tprof::ReportBy::kThread}, tprof::ReportFormat::kText);
  EXPECT_NE(text.find("     11      10 alpha                    30"), std::string::npos) << text;

  d = tprof::BuildReport(p, sym, {.by = tprof::ReportBy::kCpu});
  ASSERT_EQ(d.cpus.size(), 2u);
  EXPECT_EQ(d.cpus[0].samples + d.cpus[1].samples, 100u);
  EXPECT_EQ(d.cpus[0].cpu == 0 ? d.cpus[0].lost_samples : d.cpus[1].lost_samples, 7u);
  d = tprof::BuildReport(p, sym, {.by = tprof::ReportBy::kCpu, .pid = 20});
  ASSERT_EQ(d.cpus.size(), 2u);
  EXPECT_EQ(d.cpus[0].samples, 10u) << "one process's samples per CPU, from the context";
  EXPECT_EQ(d.cpus[1].samples, 10u);

  Profile old = p;
  old.contexts.clear();
  old.context_granularity_ns = 0;
  const std::string none =
      tprof::RenderReport(old, sym, {.by = tprof::ReportBy::kThread}, tprof::ReportFormat::kText);
  EXPECT_NE(none.find("no per-sample context"), std::string::npos) << none;
}

}  // namespace
