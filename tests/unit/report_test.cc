// Reports from a synthetic profile whose numbers add up to 100 samples
// taken: the per-process split (FIG. 1), idle and lost rows, per-function
// tables, JSON and folded stacks.
#include "tprof/output/report.h"

#include "tprof/output/json_format.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "../common/json.h"
#include "../common/records.h"

namespace {

using tprof::Profile;
using tprof::ProfileBuilder;
using tprof::ReportBy;
using tprof::ReportFormat;
using tprof::ReportOptions;
using tprof::Symbolizer;
using tprof::test::CommRec;
using tprof::test::ParseJson;
using tprof::test::Records;
using tprof::test::SampleRec;

constexpr uint64_t kSyscall = 0xffffffff81000110;  // in do_syscall_64
constexpr uint64_t kEntry = 0xffffffff81000020;    // in entry_SYSCALL_64
constexpr uint64_t kIdle = 0xffffffff81000310;     // in default_idle
constexpr uint32_t U = TPROF_SAMPLE_USER;

// pid 100 "app": 10 kernel (4 of them called from entry_SYSCALL_64), 30 in
// its executable, 20 in libc, 5 JIT, 5 unmapped = 70. pid 200 "w;rk": 10
// kernel. Idle: 15. Lost: 5. Taken: 100.
Profile TestProfile() {
  ProfileBuilder b;
  Records r;
  r.Add(CommRec(100, TPROF_COMM_EXISTING, "app")).Add(CommRec(200, TPROF_COMM_EXISTING, "w;rk"));
  r.Map(100, 1, 0x400000, 0x500000, 0, "/nonexistent/app");
  r.Map(100, 1, 0x7f0000, 0x7f8000, 0, "/nonexistent/libc.so.6");
  r.AddN(6, SampleRec(100, 1, kSyscall, 0));
  r.AddN(4, SampleRec(100, 1, kSyscall, 0, 1, kEntry + 5));
  r.AddN(30, SampleRec(100, 1, 0x400100, U));
  r.AddN(20, SampleRec(100, 1, 0x7f0100, U));
  r.AddN(5, SampleRec(100, 1, 0x9000010, U));
  r.AddN(5, SampleRec(100, 1, 0x12345, U));
  r.AddN(10, SampleRec(200, 2, kSyscall, 0));
  r.AddN(15, SampleRec(0, 0, kIdle, TPROF_SAMPLE_IDLE));
  b.AddRecords(r.data(), r.size());
  b.SetCpuTotals(0, 60, 5, 1);
  b.SetCpuTotals(1, 40, 0, 0);
  Profile p = b.Finish();
  p.kernel_symbols.available = true;
  p.kernel_symbols.symbols = {{0xffffffff81000000, 'T', "entry_SYSCALL_64", ""},
                              {0xffffffff81000100, 't', "do_syscall_64", ""},
                              {0xffffffff81000300, 'T', "default_idle", ""},
                              {0xffffffff81000400, 'T', "next", ""}};
  p.jit_symbols[100] = {{0x9000000, 0x100, "JIT:loop"}};
  return p;
}

// What Recorder::Finish() leaves out of a file: processes without a sample
// (an idle machine's daemons and kernel threads); no report changes.
// 100 samples taken on 2 CPUs over 1 s: 50 Hz per CPU achieved. Asked
// 1000 Hz, that is low (a warning and the JSON say so); asked 80 it is not;
// a process's recording, an event's or a filtered one cannot tell.
// perf throttles every counter above kernel.perf_event_max_sample_rate
// (and lowers it when handlers are slow): a clock rate above the limit at
// the end warns, saying whether the kernel lowered it meanwhile; at or
// below it, an event's samples or a file without the limit, nothing.
TEST(Report, ThrottledSamplingIsReported) {
  Profile p = TestProfile();
  p.attributes["frequency_hz"] = "4000";
  EXPECT_EQ(tprof::ThrottleWarning(p), "") << "an older file: no limit recorded";
  p.attributes[tprof::kPerfMaxRateAtStart] = "1000";
  p.attributes[tprof::kPerfMaxRateAtEnd] = "1000";
  const std::string above = tprof::ThrottleWarning(p);
  EXPECT_NE(above.find("-F 4000 is above kernel.perf_event_max_sample_rate (1000 Hz)"),
            std::string::npos) << above;
  p.attributes[tprof::kPerfMaxRateAtStart] = "100000";
  const std::string lowered = tprof::ThrottleWarning(p);
  EXPECT_NE(lowered.find("lowered kernel.perf_event_max_sample_rate from 100000 to 1000 Hz"),
            std::string::npos) << lowered;
  Symbolizer sym(p);
  std::string error;
  auto j = ParseJson(tprof::RenderReport(p, sym, ReportOptions{}, ReportFormat::kJson), &error);
  ASSERT_TRUE(j) << error;
  EXPECT_TRUE((*j).at("sampling_throttle").at("throttled").get<bool>());
  EXPECT_EQ((*j).at("sampling_throttle").at("max_sample_rate_at_end").get<uint64_t>(), 1000u);
  const std::string text = tprof::RenderReport(p, sym, ReportOptions{}, ReportFormat::kText);
  EXPECT_NE(text.find("perf's sample limit: 1000 Hz per counter"), std::string::npos) << text;
  EXPECT_EQ(text.find(tprof::kPerfMaxRateAtStart), std::string::npos) << text;
  p.attributes["frequency_hz"] = "1000";
  EXPECT_EQ(tprof::ThrottleWarning(p), "") << "at the limit: 4 a tick at HZ 250, not over";
  p.attributes["frequency_hz"] = "0";
  EXPECT_EQ(tprof::ThrottleWarning(p), "") << "samples on an event's overflows";
}

TEST(Report, SamplingRateOfARecordingOfEveryCpu) {
  Profile p = TestProfile();
  p.first_time_ns = 1'000'000'000;
  p.last_time_ns = 2'000'000'000;
  EXPECT_FALSE(tprof::AchievedSamplingRate(p)) << "no attributes";
  p.attributes["pid"] = "all";
  p.attributes["frequency_hz"] = "1000";
  auto rate = tprof::AchievedSamplingRate(p);
  ASSERT_TRUE(rate);
  EXPECT_DOUBLE_EQ(rate->achieved_hz, 50);
  EXPECT_DOUBLE_EQ(rate->requested_hz, 1000);
  EXPECT_TRUE(rate->low);
  EXPECT_NE(tprof::LowRateWarning(*rate).find("50 samples per second per CPU were taken of the 1000"),
            std::string::npos);
  Symbolizer sym(p);
  ReportOptions o;
  std::string text = tprof::RenderReport(p, sym, o, ReportFormat::kText);
  EXPECT_NE(text.find("sampling rate: 50 Hz per CPU achieved, 1000 asked for (low"), std::string::npos)
      << text;
  // The settings are named, with units, not raw keys.
  EXPECT_NE(text.find("sampling: on the clock, 1000 Hz per CPU\n"), std::string::npos) << text;
  EXPECT_NE(text.find("recorded: every process\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("frequency_hz"), std::string::npos) << text;
  std::string error;
  auto j = ParseJson(tprof::RenderReport(p, sym, o, ReportFormat::kJson), &error);
  ASSERT_TRUE(j) << error;
  EXPECT_EQ((*j).at("sampling_rate").at("low").get<bool>(), true);
  EXPECT_EQ((*j).at("sampling_rate").at("achieved_hz").get<double>(), 50.0);

  // In the scheduler tick: HZ is asked for, and the ticks idle CPUs
  // skipped count as their samples of idle.
  p.attributes["frequency_hz"] = "250";
  p.attributes[tprof::kSamplingClock] = "tick";
  p.idle_ticks = 300;
  p.iowait_ticks = 20;
  rate = tprof::AchievedSamplingRate(p);
  ASSERT_TRUE(rate);
  EXPECT_TRUE(rate->tick);
  EXPECT_DOUBLE_EQ(rate->achieved_hz, 50 + 300 / 2.0);
  EXPECT_FALSE(rate->low);
  text = tprof::RenderReport(p, sym, o, ReportFormat::kText);
  EXPECT_NE(text.find("sampling: in the scheduler tick, HZ 250 per busy CPU\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("idle ticks: 300 skipped by CPUs asleep with their tick stopped, 20 of them "
                      "waiting for I/O\n"),
            std::string::npos)
      << text;
  j = ParseJson(tprof::RenderReport(p, sym, o, ReportFormat::kJson), &error);
  ASSERT_TRUE(j) << error;
  EXPECT_EQ((*j).at("idle_ticks").get<uint64_t>(), 300u);
  EXPECT_EQ((*j).at("iowait_ticks").get<uint64_t>(), 20u);
  p.idle_ticks = 0;
  rate = tprof::AchievedSamplingRate(p);
  ASSERT_TRUE(rate);
  EXPECT_TRUE(rate->low);
  EXPECT_NE(tprof::LowRateWarning(*rate).find("taken in the scheduler tick, which runs at HZ 250"),
            std::string::npos)
      << tprof::LowRateWarning(*rate);
  p.attributes.erase(tprof::kSamplingClock);
  p.iowait_ticks = 0;

  p.attributes["frequency_hz"] = "80";
  rate = tprof::AchievedSamplingRate(p);
  ASSERT_TRUE(rate);
  EXPECT_FALSE(rate->low);
  EXPECT_EQ(tprof::LowRateWarning(*rate), "");
  p.attributes["pid"] = "42";
  EXPECT_FALSE(tprof::AchievedSamplingRate(p)) << "a process runs part of the time";
  p.attributes["pid"] = "all";
  p.attributes["frequency_hz"] = "0";
  EXPECT_FALSE(tprof::AchievedSamplingRate(p)) << "samples on an event";
  p.attributes["frequency_hz"] = "1000";
  p.attributes["filter"] = "--cpu 0";
  EXPECT_FALSE(tprof::AchievedSamplingRate(p)) << "a filtered profile";
  p.attributes.erase("filter");
  p.last_time_ns = p.first_time_ns + 100'000'000;
  EXPECT_FALSE(tprof::AchievedSamplingRate(p)) << "too short to tell";
}

TEST(Report, SaysTheSameWithoutTheProcessesNoSampleBelongsTo) {
  Profile p = TestProfile();
  ProfileBuilder extra;
  Records r;
  r.Add(CommRec(300, TPROF_COMM_EXISTING, "kthreadd")).Add(CommRec(301, TPROF_COMM_FORK, "", 300));
  extra.AddRecords(r.data(), r.size());
  for (auto& [pid, proc] : extra.Finish().processes) p.processes[pid] = proc;
  Profile pruned = p;
  tprof::DropUnsampledProcesses(&pruned);
  EXPECT_EQ(pruned.processes.size(), 2u);
  EXPECT_EQ(pruned.processes.count(300), 0u);
  EXPECT_EQ(pruned.processes.at(100).name(), "app");
  Symbolizer sym(p), sym_pruned(pruned);
  for (ReportFormat f : {ReportFormat::kText, ReportFormat::kJson, ReportFormat::kFolded})
    for (ReportBy by : {ReportBy::kAll, ReportBy::kProcess, ReportBy::kSymbol, ReportBy::kCaller,
                        ReportBy::kThread, ReportBy::kCpu})
      EXPECT_EQ(tprof::RenderReport(p, sym, {by, 100, 0}, f),
                tprof::RenderReport(pruned, sym_pruned, {by, 100, 0}, f));
}

TEST(Report, SplitsEachProcessIntoKernelUserSharedWithIdleAndLostRows) {
  Profile p = TestProfile();
  Symbolizer sym(p);
  tprof::ReportData d = tprof::BuildReport(p, sym, {});
  EXPECT_EQ(d.all_samples, 100u);
  EXPECT_EQ(d.samples, 95u);
  EXPECT_EQ(d.lost_samples, 5u);
  EXPECT_EQ(d.lost_records, 1u);
  EXPECT_EQ(d.idle_samples, 15u);
  // The files do not exist: 30 + 20 at unnamed addresses, 5 unmapped.
  EXPECT_EQ(d.unresolved_samples, 55u);
  ASSERT_EQ(d.processes.size(), 2u) << "idle is its own row, not a process";
  const tprof::ProcessSummary& app = d.processes[0];
  EXPECT_EQ(app.pid, 100u);
  EXPECT_EQ(app.name, "app");
  EXPECT_EQ(app.samples, 70u);
  EXPECT_EQ(app.kernel, 10u);
  EXPECT_EQ(app.user, 30u);
  EXPECT_EQ(app.shared, 20u);
  EXPECT_EQ(app.jit, 5u);
  EXPECT_EQ(app.unresolved, 5u);
  EXPECT_EQ(d.processes[1].kernel, 10u);

  std::string text = tprof::RenderReport(p, sym, {}, ReportFormat::kText);
  EXPECT_NE(text.find("100 samples taken (95 delivered, 5 lost)"), std::string::npos) << text;
  EXPECT_NE(text.find("    100 app                      70   70.0%   10.0%   30.0%   20.0%   10.0%"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[idle/wait]              15   15.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("[lost]                    5    5.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("unresolved: 55 samples (55.0%)"), std::string::npos) << text;
}

TEST(Report, ListsFunctionsPerProcessByCountWithPercentages) {
  Profile p = TestProfile();
  Symbolizer sym(p);
  tprof::ReportData d = tprof::BuildReport(p, sym, {});
  ASSERT_EQ(d.functions.size(), 3u);
  const tprof::ProcessFunctions& app = d.functions[0];
  EXPECT_EQ(app.pid, 100u);
  ASSERT_EQ(app.functions.size(), 5u);
  EXPECT_EQ(app.functions[0].function, "app+0x100") << "an unnamed address: file + offset";
  EXPECT_EQ(app.functions[0].space, "main");
  EXPECT_EQ(app.functions[1].function, "libc.so.6+0x100");
  EXPECT_EQ(app.functions[1].space, "shared:/nonexistent/libc.so.6");
  EXPECT_EQ(app.functions[2].function, "do_syscall_64");
  EXPECT_EQ(app.functions[2].samples, 10u);
  EXPECT_EQ(d.functions[1].name, "idle");
  EXPECT_EQ(d.functions[1].functions[0].function, "default_idle");

  std::string text = tprof::RenderReport(p, sym, {ReportBy::kSymbol, 100, 0}, ReportFormat::kText);
  EXPECT_EQ(text.find("[idle/wait]"), std::string::npos) << "--by symbol has no process table";
  EXPECT_NE(text.find("PID 100 app: 70 samples, 70.0% of all"), std::string::npos) << text;
  EXPECT_NE(text.find("        10   14.3%   10.0%  kernel           do_syscall_64\n"),
            std::string::npos)
      << "the SPACE column is as wide as its widest cell (shared:libc.so.6); no trailing blanks\n"
      << text;
  EXPECT_EQ(text.find("PID 200"), std::string::npos) << "--pid 100 shows only pid 100";
}

TEST(Report, TopNLimitsRowsAndSaysWhatItLeftOut) {
  Profile p = TestProfile();
  Symbolizer sym(p);
  std::string text = tprof::RenderReport(p, sym, {ReportBy::kAll, std::nullopt, 1}, ReportFormat::kText);
  EXPECT_EQ(text.find("w;rk"), std::string::npos) << text;
  EXPECT_NE(text.find("(1 more)"), std::string::npos) << text;
  // The rows past --top, one per space, with their samples.
  EXPECT_NE(text.find("        20   28.6%   20.0%  shared:libc.so.6 (1 more function)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("        10   14.3%   10.0%  kernel           (1 more function)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(2 more processes"), std::string::npos) << text;
}

// 1000 samples of one process: 900 in main, then libc's 40 + 10, then 50
// one-sample rows of the loader (each 0.1%, under the default 0.5%).
Profile ManySmallRowsProfile() {
  ProfileBuilder b;
  Records r;
  r.Add(CommRec(100, TPROF_COMM_EXISTING, "app"));
  r.Map(100, 1, 0x400000, 0x500000, 0, "/nonexistent/app");
  r.Map(100, 1, 0x7f0000, 0x7f8000, 0, "/nonexistent/libc.so.6");
  r.Map(100, 1, 0x600000, 0x700000, 0, "/nonexistent/ld-linux-x86-64.so.2");
  r.AddN(900, SampleRec(100, 1, 0x400100, U));
  r.AddN(40, SampleRec(100, 1, 0x7f0100, U));
  r.AddN(10, SampleRec(100, 1, 0x7f0200, U));
  for (int i = 0; i < 50; ++i) r.Add(SampleRec(100, 1, 0x600000 + 0x100 * i, U));
  b.AddRecords(r.data(), r.size());
  b.SetCpuTotals(0, 1000, 0, 0);
  return b.Finish();
}

TEST(Report, TextLeavesOutRowsUnderTheDefaultPercentLimitSummedPerSpace) {
  Profile p = ManySmallRowsProfile();
  Symbolizer sym(p);
  ReportOptions o;
  o.by = ReportBy::kSymbol;
  std::string text = tprof::RenderReport(p, sym, o, ReportFormat::kText);
  EXPECT_NE(text.find("libc.so.6+0x200"), std::string::npos) << "1.0% is over 0.5%\n" << text;
  EXPECT_EQ(text.find("ld-linux-x86-64.so.2+0x"), std::string::npos) << text;
  EXPECT_NE(text.find("        50    5.0%    5.0%  shared:ld-linux-x86-64.so.2 (50 more functions)\n"),
            std::string::npos)
      << text;
  // --percent-limit 0 shows every row; 2 leaves out libc's 1% row too.
  o.percent_limit = 0;
  text = tprof::RenderReport(p, sym, o, ReportFormat::kText);
  EXPECT_NE(text.find("ld-linux-x86-64.so.2+0x3100"), std::string::npos) << text;
  EXPECT_EQ(text.find("more function"), std::string::npos) << text;
  o.percent_limit = 2;
  text = tprof::RenderReport(p, sym, o, ReportFormat::kText);
  EXPECT_EQ(text.find("libc.so.6+0x200"), std::string::npos) << text;
  EXPECT_NE(text.find("shared:libc.so.6            (1 more function)"), std::string::npos) << text;
}

TEST(Report, JsonKeepsEveryRowUnlessAPercentLimitIsGiven) {
  Profile p = ManySmallRowsProfile();
  Symbolizer sym(p);
  ReportOptions o;
  o.by = ReportBy::kSymbol;
  std::string error;
  auto all = ParseJson(tprof::RenderReport(p, sym, o, ReportFormat::kJson), &error);
  ASSERT_TRUE(all) << error;
  EXPECT_EQ((*all)["functions"][0]["functions"].size(), 53u);
  EXPECT_TRUE((*all)["functions"][0]["left_out"].empty());
  o.percent_limit = 0.5;
  auto cut = ParseJson(tprof::RenderReport(p, sym, o, ReportFormat::kJson), &error);
  ASSERT_TRUE(cut) << error;
  EXPECT_EQ((*cut)["functions"][0]["functions"].size(), 3u);
  ASSERT_EQ((*cut)["functions"][0]["left_out"].size(), 1u);
  EXPECT_EQ((*cut)["functions"][0]["left_out"][0]["functions"], 50);
  EXPECT_EQ((*cut)["functions"][0]["left_out"][0]["samples"], 50);
  EXPECT_EQ((*cut)["functions"][0]["left_out"][0]["space"],
            "shared:/nonexistent/ld-linux-x86-64.so.2");
}

TEST(Report, SortOrdersFunctionRowsBySpaceOrName) {
  Profile p = ManySmallRowsProfile();
  Symbolizer sym(p);
  ReportOptions o;
  o.percent_limit = 0;
  auto names = [&] {
    std::vector<std::string> out;
    const tprof::ReportData d = tprof::BuildReport(p, sym, o);
    for (const tprof::FunctionRow& f : d.functions[0].functions) out.push_back(f.function);
    return out;
  };
  std::vector<std::string> by_samples = names();
  ASSERT_EQ(by_samples.size(), 53u);
  EXPECT_EQ(by_samples[0], "app+0x100");
  EXPECT_EQ(by_samples[1], "libc.so.6+0x100");
  EXPECT_EQ(by_samples[2], "libc.so.6+0x200");
  // By space: main (900), ld-linux (50 in all), then libc (50: the name breaks the tie).
  o.sort = tprof::ReportSort::kSpace;
  std::vector<std::string> by_space = names();
  EXPECT_EQ(by_space[0], "app+0x100");
  EXPECT_EQ(by_space[1], "ld-linux-x86-64.so.2+0x0");
  EXPECT_EQ(by_space[51], "libc.so.6+0x100");
  EXPECT_EQ(by_space[52], "libc.so.6+0x200");
  o.sort = tprof::ReportSort::kFunction;
  std::vector<std::string> by_name = names();
  EXPECT_TRUE(std::is_sorted(by_name.begin(), by_name.end()));
}

TEST(Report, JsonHoldsTheSplitLostAndUnresolvedCounts) {
  Profile p = TestProfile();
  Symbolizer sym(p);
  std::string json = tprof::RenderReport(p, sym, {}, ReportFormat::kJson);
  std::string error;
  auto v = ParseJson(json, &error);
  ASSERT_TRUE(v) << error << "\n" << json;
  EXPECT_EQ((*v).at("format_version").get<int>(), tprof::kJsonFormatVersion);
  EXPECT_EQ((*v).at("samples_taken").get<double>(), 100);
  EXPECT_EQ((*v).at("lost").at("samples").get<double>(), 5);
  EXPECT_EQ((*v).at("lost").at("percent").get<double>(), 5.0) << "a decimal percentage";
  EXPECT_EQ((*v).at("idle").at("samples").get<double>(), 15);
  EXPECT_EQ((*v).at("unresolved_samples").get<double>(), 55);
  const auto& app = (*v).at("processes").at(0);
  EXPECT_EQ(app.at("pid").get<double>(), 100);
  EXPECT_EQ(app.at("kernel").get<double>(), 10);
  EXPECT_EQ(app.at("user").get<double>(), 30);
  EXPECT_EQ(app.at("shared").get<double>(), 20);
  EXPECT_EQ(app.at("percent").get<double>(), 70.0);
  EXPECT_EQ(app.at("names").at(0).at("kind").get<std::string>(), "existing");
  const auto& fns = (*v).at("functions").at(0).at("functions");
  EXPECT_EQ(fns.at(2).at("function").get<std::string>(), "do_syscall_64");
  EXPECT_EQ(fns.at(2).at("kind").get<std::string>(), "kernel");
  EXPECT_EQ(fns.at(2).at("process_percent").get<double>(), 14.29) << "10 of 70, two decimals";
  EXPECT_FALSE(fns.at(0).at("resolved").get<bool>());
}

// Kernel symbols matter where samples are in the kernel: the header says
// they are unavailable only then, and a tenth or more of the samples
// unnamed there warns with why (dump prints it on stderr, JSON holds it).
TEST(Report, UnnamedKernelSamplesWarnWithWhy) {
  Profile p = TestProfile();
  p.kernel_symbols = {};
  p.kernel_symbols.note = "/proc/kallsyms shows no kernel addresses (run as root)";
  Symbolizer sym(p);
  const tprof::SampleShares k = tprof::CountSampleShares(p, sym, {});
  EXPECT_EQ(k.samples, 80u) << "70 of app, 10 of w;rk; idle left out";
  EXPECT_EQ(k.kernel, 20u);
  EXPECT_EQ(k.unresolved_kernel, 20u);
  EXPECT_EQ(k.recorder, 0u) << "no recorder_pid attribute";
  const std::string w = tprof::SampleShareWarnings(p, k);
  EXPECT_NE(w.find("25% of the samples (20 of 80, idle left out) are kernel addresses"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("(/proc/kallsyms shows no kernel addresses (run as root))"), std::string::npos)
      << w;
  EXPECT_NE(w.find("kptr_restrict=0"), std::string::npos) << w;
  EXPECT_NE(tprof::RenderReport(p, sym, {}, ReportFormat::kText).find("kernel symbols: unavailable"),
            std::string::npos);
  std::string error;
  auto v = ParseJson(tprof::RenderReport(p, sym, {}, ReportFormat::kJson), &error);
  ASSERT_TRUE(v) << error;
  EXPECT_EQ((*v).at("sample_shares").at("unresolved_kernel").get<double>(), 20);
  EXPECT_EQ((*v).at("sample_shares").at("warnings").get<std::string>(), w);
  // Under a tenth: 6 of 70 is not worth a warning, 7 is.
  EXPECT_EQ(tprof::SampleShareWarnings(p, {70, 10, 6, 0}), "");
  EXPECT_NE(tprof::SampleShareWarnings(p, {70, 10, 7, 0}), "");
  // Named: no warning.
  Profile named = TestProfile();
  Symbolizer named_sym(named);
  EXPECT_EQ(tprof::CountSampleShares(named, named_sym, {}).unresolved_kernel, 0u);
  // No sample in the kernel: nothing said of its symbols.
  ProfileBuilder b;
  Records r;
  r.Add(CommRec(100, TPROF_COMM_EXISTING, "app"));
  r.Map(100, 1, 0x400000, 0x500000, 0, "/nonexistent/app");
  r.AddN(5, SampleRec(100, 1, 0x400100, U));
  b.AddRecords(r.data(), r.size());
  Profile user = b.Finish();
  Symbolizer user_sym(user);
  const std::string text = tprof::RenderReport(user, user_sym, {}, ReportFormat::kText);
  EXPECT_EQ(text.find("kernel symbols"), std::string::npos) << text;
}

// A recording of every process samples its recorder too: a twentieth or
// more of the samples being tprofctl's own warns, naming its pid.
TEST(Report, TheRecordersOwnShareWarns) {
  Profile p = TestProfile();
  p.attributes[tprof::kRecorderPid] = "200";  // w;rk's 10 of 80
  Symbolizer sym(p);
  const tprof::SampleShares k = tprof::CountSampleShares(p, sym, {});
  EXPECT_EQ(k.recorder, 10u);
  const std::string w = tprof::SampleShareWarnings(p, k);
  EXPECT_NE(w.find("12% of the samples (10 of 80) are the recorder's own (tprofctl, pid 200)"),
            std::string::npos)
      << w;
  EXPECT_EQ(tprof::SampleShareWarnings(p, {80, 0, 0, 3}), "") << "3 of 80: under a twentieth";
  EXPECT_NE(tprof::RenderReport(p, sym, {}, ReportFormat::kText)
                .find("recorder: tprofctl, pid 200"),
            std::string::npos);
  ReportOptions app;
  app.pid = 100;
  EXPECT_EQ(tprof::CountSampleShares(p, sym, app).recorder, 0u) << "another process's report";
}

TEST(Report, FoldedStacksHaveCallerFramesWhereKnown) {
  Profile p = TestProfile();
  Symbolizer sym(p);
  std::string folded = tprof::RenderReport(p, sym, {}, ReportFormat::kFolded);
  EXPECT_NE(folded.find("app;entry_SYSCALL_64_[k];do_syscall_64_[k] 4\n"), std::string::npos)
      << folded;
  EXPECT_NE(folded.find("app;do_syscall_64_[k] 6\n"), std::string::npos) << folded;
  EXPECT_NE(folded.find("app;JIT:loop 5\n"), std::string::npos) << folded;
  EXPECT_NE(folded.find("app;[unknown] 0x12345 5\n"), std::string::npos) << folded;
  EXPECT_NE(folded.find("w:rk;do_syscall_64_[k] 10\n"), std::string::npos)
      << "';' would split a frame: " << folded;
  EXPECT_NE(folded.find("idle;default_idle_[k] 15\n"), std::string::npos) << folded;
  // Every line is "frames count" and the counts add up to the delivered samples.
  uint64_t total = 0;
  size_t pos = 0;
  while (pos < folded.size()) {
    size_t eol = folded.find('\n', pos);
    ASSERT_NE(eol, std::string::npos);
    std::string line = folded.substr(pos, eol - pos);
    total += std::stoull(line.substr(line.rfind(' ') + 1));
    pos = eol + 1;
  }
  EXPECT_EQ(total, 95u);

  std::string one = tprof::RenderReport(p, sym, {ReportBy::kAll, 200, 0}, ReportFormat::kFolded);
  EXPECT_EQ(one, "w:rk;do_syscall_64_[k] 10\n");
}

TEST(Report, FoldedStackRowsAreTheFoldedLinesRootFirst) {
  Profile p = TestProfile();
  Symbolizer sym(p);
  std::string folded;
  uint64_t total = 0;
  for (const tprof::StackRow& row : tprof::FoldedStackRows(p, sym, {})) {
    std::string line;
    for (const std::string& f : row.frames) line += (line.empty() ? "" : ";") + f;
    folded += line + " " + std::to_string(row.samples) + "\n";
    total += row.samples;
  }
  // FoldedStacks prints the same lines, heaviest first.
  std::vector<std::pair<std::string, uint64_t>> lines;
  for (const tprof::StackRow& row : tprof::FoldedStackRows(p, sym, {})) {
    std::string line;
    for (const std::string& f : row.frames) line += (line.empty() ? "" : ";") + f;
    lines.emplace_back(line, row.samples);
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string heaviest;
  for (const auto& [line, n] : lines) heaviest += line + " " + std::to_string(n) + "\n";
  EXPECT_EQ(heaviest, tprof::FoldedStacks(p, sym, {}));
  EXPECT_NE(folded, heaviest) << "the rows themselves stay in text order";
  EXPECT_EQ(total, 95u);
  auto one = tprof::FoldedStackRows(p, sym, {ReportBy::kAll, 200, 0});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].pid, 200u);
  EXPECT_EQ(one[0].frames, (std::vector<std::string>{"w:rk", "do_syscall_64_[k]"}));
  EXPECT_EQ(one[0].samples, 10u);
}

// pid 100 "app": 6 samples in the kernel (do_syscall_64 called from
// entry_SYSCALL_64) entered from libc, called from app; 4 in app called
// from libc. The leaf's recorded return address is not used: no CFI says
// the leaf lacks a frame (the files do not exist). Unnamed addresses are
// rows of their own ("app+0x2ff"), so app's and libc's frames each sit on
// one address: a caller is named at its return address - 1.
Profile StackProfile() {
  ProfileBuilder b;
  Records r;
  r.Add(CommRec(100, TPROF_COMM_EXISTING, "app"));
  r.Map(100, 1, 0x400000, 0x500000, 0, "/nonexistent/app");
  r.Map(100, 1, 0x7f0000, 0x7f8000, 0, "/nonexistent/libc.so.6");
  for (int i = 0; i < 6; ++i)
    r.StackSample(SampleRec(100, 1, kSyscall, 0), TPROF_STACK_USER_IP | TPROF_STACK_LEAF_RA,
                  {kEntry + 5}, {0x7f01ff, 0x400200, 0x400300});
  for (int i = 0; i < 4; ++i) r.StackSample(SampleRec(100, 1, 0x4002ff, U), 0, {}, {0x7f0200});
  b.AddRecords(r.data(), r.size());
  Profile p = b.Finish();
  p.kernel_symbols.available = true;
  p.kernel_symbols.symbols = {{0xffffffff81000000, 'T', "entry_SYSCALL_64", ""},
                              {0xffffffff81000100, 't', "do_syscall_64", ""},
                              {0xffffffff81000400, 'T', "next", ""}};
  return p;
}

TEST(Report, FoldedStacksCarryWholeStacksKernelUnderUser) {
  Profile p = StackProfile();
  Symbolizer sym(p);
  EXPECT_EQ(tprof::FoldedStacks(p, sym, {}),
            "app;app+0x2ff;libc.so.6+0x1ff;entry_SYSCALL_64_[k];do_syscall_64_[k] 6\n"
            "app;libc.so.6+0x1ff;app+0x2ff 4\n");
}

TEST(Report, ChildrenAndCallerViewsCountEachSampleOnce) {
  Profile p = StackProfile();
  Symbolizer sym(p);
  ReportOptions o;
  o.children = true;
  tprof::ReportData d = tprof::BuildReport(p, sym, o);
  ASSERT_EQ(d.functions.size(), 1u);
  const tprof::ProcessFunctions& pf = d.functions[0];
  std::map<std::string, std::pair<uint64_t, uint64_t>> rows;  // function: {inclusive, self}
  for (const tprof::FunctionRow& f : pf.functions) rows[f.function] = {f.inclusive, f.samples};
  EXPECT_EQ(rows["app+0x2ff"], (std::pair<uint64_t, uint64_t>{10, 4}))
      << "app is both a root and a leaf of one stack kind: counted once per sample";
  EXPECT_EQ(rows["libc.so.6+0x1ff"], (std::pair<uint64_t, uint64_t>{10, 0}));
  EXPECT_EQ(rows["entry_SYSCALL_64"], (std::pair<uint64_t, uint64_t>{6, 0}));
  EXPECT_EQ(rows["do_syscall_64"], (std::pair<uint64_t, uint64_t>{6, 6}));
  ASSERT_FALSE(pf.functions.empty());
  EXPECT_EQ(pf.functions[0].inclusive, 10u) << "sorted by inclusive samples";
  std::map<std::string, uint64_t> steps;
  for (const tprof::CallerRow& c : pf.callers) steps[c.caller + " -> " + c.callee] = c.samples;
  EXPECT_EQ(steps["app+0x2ff -> libc.so.6+0x1ff"], 6u);
  EXPECT_EQ(steps["libc.so.6+0x1ff -> entry_SYSCALL_64"], 6u);
  EXPECT_EQ(steps["entry_SYSCALL_64 -> do_syscall_64"], 6u);
  EXPECT_EQ(steps["libc.so.6+0x1ff -> app+0x2ff"], 4u);
  EXPECT_EQ(steps.size(), 4u);
  o.by = ReportBy::kCaller;
  std::string text = tprof::RenderReport(p, sym, o, ReportFormat::kText);
  EXPECT_NE(text.find("entry_SYSCALL_64 -> do_syscall_64"), std::string::npos) << text;
  o.by = ReportBy::kSymbol;
  text = tprof::RenderReport(p, sym, o, ReportFormat::kText);
  EXPECT_NE(text.find("CHILDREN"), std::string::npos) << text;
}

TEST(Report, FoldedStacksMergeProcessesOfOneName) {
  ProfileBuilder b;
  Records r;
  r.Add(CommRec(1, TPROF_COMM_EXISTING, "sh")).Add(CommRec(2, TPROF_COMM_EXISTING, "sh"));
  r.AddN(2, SampleRec(1, 1, kSyscall, 0)).AddN(3, SampleRec(2, 2, kSyscall, 0));
  b.AddRecords(r.data(), r.size());
  Profile p = b.Finish();
  p.kernel_symbols.available = true;
  p.kernel_symbols.symbols = {{0xffffffff81000100, 't', "do_syscall_64", ""},
                              {0xffffffff81000300, 'T', "next", ""}};
  Symbolizer sym(p);
  EXPECT_EQ(tprof::FoldedStacks(p, sym, {}), "sh;do_syscall_64_[k] 5\n");
  auto rows = tprof::FoldedStackRows(p, sym, {});
  ASSERT_EQ(rows.size(), 2u) << "the rows keep the pids apart";
  EXPECT_EQ(rows[0].pid, 1u);
  EXPECT_EQ(rows[0].samples, 2u);
  EXPECT_EQ(rows[1].pid, 2u);
  EXPECT_EQ(rows[1].samples, 3u);
}

}  // namespace
