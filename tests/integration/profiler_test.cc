// The profiler as a user runs it in the guest: `tprofctl record/start/stop/
// dump` on the bundled workloads (tests/workloads/), checking what a user
// relies on: the known splits come out within a few points, short-lived
// processes and JIT code are named, lost and idle samples are counted, the
// background recorder survives misuse, and unprivileged users see their own
// process without kernel addresses.
//
// Every profile made here passes CheckAccounting(): per CPU, samples
// delivered + lost == taken (the kernel's control-area totals), and the
// report's rows add up.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "../common/json.h"
#include "tprof/output/json_format.h"
#include "../common/temp_dir.h"
#include "guest_env.h"
#include "profile_json.h"
#include "tprof/analysis/profile_file.h"
#include "tprof/device/sampling.h"

namespace tprof::test {
namespace {

using Clock = std::chrono::steady_clock;

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The background recorder's pid file, as tools/tprofctl/record.cc names it.
std::string RecorderPidFile() {
  const char* run = std::getenv("XDG_RUNTIME_DIR");
  return std::string(run && *run ? run : "/tmp") + "/tprof-recorder." + std::to_string(getuid()) +
         ".pid";
}

pid_t RecorderPid() {
  std::ifstream in(RecorderPidFile());
  pid_t pid = 0;
  return in >> pid ? pid : 0;
}

bool ProcessGone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

uint32_t DeviceState() { return GetInfoOrFail(OpenDeviceOrFail()).state; }

// How long a session may take to end after its owner's descriptor is gone
// (wall time: the recorder's exit, the file's release, perf events torn
// down). Milliseconds on Debian's kernels; seconds in the KASAN kernel on a
// loaded host. The tests check that it ends (and record how long it took),
// not how fast.
constexpr int kSessionEndMs = 30000;

// Polls GET_INFO until the module is idle; returns the ms it took, or -1.
int WaitForIdle(int timeout_ms) {
  auto start = Clock::now();
  Device dev = OpenDeviceOrFail();
  for (;;) {
    int ms = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
    if (GetInfoOrFail(dev).state == TPROF_STATE_IDLE) return ms;
    if (ms > timeout_ms) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// "profile written to PATH: N samples, M lost" (record and stop print it).
struct Written {
  std::string path;
  uint64_t samples = 0, lost = 0;
};
std::optional<Written> ParseWritten(const std::string& out) {
  std::smatch m;
  static const std::regex re(R"(profile written to (\S+): (\d+) samples, (\d+) lost)");
  if (!std::regex_search(out, m, re)) return std::nullopt;
  return Written{m[1], std::stoull(m[2]), std::stoull(m[3])};
}

// The count of the text report's "[lost]" row.
std::optional<uint64_t> LostRow(const std::string& text) {
  std::smatch m;
  static const std::regex re(R"((^|\n)\s*-\s+\[lost\]\s+(\d+)\s)");
  if (!std::regex_search(text, m, re)) return std::nullopt;
  return std::stoull(m[2]);
}

// Every test starts with nothing recording and leaves no recorder behind.
class Profiler : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    ASSERT_GE(WaitForIdle(kSessionEndMs), 0) << "a session from an earlier test is still running";
  }
  void TearDown() override {
    pid_t pid = RecorderPid();
    if (pid > 0 && !ProcessGone(pid)) {
      ADD_FAILURE() << "recorder " << pid << " left running; killing it";
      ::kill(pid, SIGKILL);
      for (int i = 0; i < 200 && !ProcessGone(pid); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::unlink(RecorderPidFile().c_str());
  }
  // `tprofctl record -o DIR/NAME OPTIONS -- CMD` in the test's directory.
  Result Record(const std::string& name, const std::string& options, const std::string& cmd) {
    return Sh("cd " + dir_.path() + " && tprofctl record -o " + name + " " + options + " -- " +
              cmd);
  }

  TempDir dir_;
};

// One recording of a workload with a known split. Under TCG the guest's
// clock keeps running while the host deschedules a vCPU: the workload
// (which schedules its parts by thread CPU time) charges the stall to
// whatever part was running, while the profiler, whose cpu-clock timer
// catches up with one sample, does not. Such a run is "disturbed": its
// own split misses the target by more than 2 points, or the process got
// fewer than 85% of the samples its CPU time was worth at 1 kHz (a calm
// host gives 95-100%). A disturbed run is retried once; if the host stays
// busy, the shares are checked within 10 points instead of 5.
struct SplitRun {
  std::string file;  // the profile
  Result result;
  std::optional<Json> json;
  WorkloadLine workload;
  double tick_ratio = 0;  // process samples / CPU ms the workload spent
  bool disturbed = true;
  double tolerance = 5;  // points; 10 when every attempt was disturbed
  std::string note;
};

// The KUnit kernel (lockdep, atomic-sleep checks) makes every kernel path,
// the sample handler's included, several times slower, which shifts a few
// points of each sampled process towards the kernel: 3 more points there.
bool LockdepKernel() { return ::access("/proc/lockdep", F_OK) == 0; }

// How far a share measured from n samples may miss its nominal value for
// sampling alone: three standard deviations of a binomial share, in points.
// A loaded host delivers fewer samples for the same CPU time (a descheduled
// vCPU loses timer ticks, not CPU time), so the checks follow the samples
// the profile actually holds, never the time the workload took.
double SamplingPoints(double nominal_pct, uint64_t n) {
  const double p = nominal_pct / 100;
  return n ? 300 * std::sqrt(p * (1 - p) / static_cast<double>(n)) : 100;
}

// The tolerance of a share: the run's (host disturbance, kernel) or what
// n samples allow, whichever is wider.
double Tolerance(const SplitRun& run, double nominal_pct, uint64_t n, double extra = 0) {
  return std::max(run.tolerance + extra, SamplingPoints(nominal_pct, n));
}

// A part's expected share of the samples: the share of the thread's CPU
// time the workload measured in it (its thread CPU clock, read around each
// part). The sampler's own interrupt time is charged to whichever part it
// interrupted, in proportion to that part's samples, so it leaves the
// shares as they are.
double ExpectedShare(const SplitRun& run, const std::string& part) {
  return run.workload.percent.at(part);
}

// Fewer samples than this and a split says nothing (3 sigma > 13 points).
constexpr uint64_t kMinSplitSamples = 100;

// Records up to twice, stopping at the first undisturbed run; returns
// that one, or the least disturbed (by tick ratio).
//
// A tick ratio far above 1 means the profile holds more samples than the
// process's CPU time is worth: the sample handler's own time is being
// sampled (the KASAN debug kernel under TCG spends about a period in it at
// 1 kHz, and the split drowns in kernel samples). Such a run is recorded
// again at a tenth of the rate, with a workload three times longer.
SplitRun RecordUndisturbed(const TempDir& dir, const std::string& options,
                           const std::string& workload, int ms, const std::string& process,
                           const std::map<std::string, double>& nominal) {
  SplitRun best;
  int hz = 1000;
  bool slowed = false;
  for (int attempt = 1; attempt <= (slowed ? 3 : 2); ++attempt) {
    SplitRun run;
    run.file = dir.File("run" + std::to_string(attempt) + ".data");
    run.result = Sh("cd " + dir.path() + " && tprofctl record -o " + run.file + " --freq " +
                    std::to_string(hz) + " " + options + " -- " + workload + " --ms " +
                    std::to_string(ms));
    EXPECT_EQ(run.result.rc, 0) << run.result.out;
    if (run.result.rc != 0) return run;
    run.json = DumpJson(run.file);
    auto line = ParseWorkloadLine(run.result.out);
    EXPECT_TRUE(line) << "no split line from the workload:\n" << run.result.out;
    if (!run.json || !line) return run;
    run.workload = *line;
    const Json* p = ProcessRow(*run.json, process);
    EXPECT_TRUE(p) << "no " << process << " in the profile";
    if (!p) return run;
    run.tick_ratio = static_cast<double>(N((*p).at("samples"))) /
                     (static_cast<double>(line->total_ns) / 1e6 * hz / 1000);
    if (run.tick_ratio > 1.2 && !slowed) {
      std::printf("  [%s] attempt %d: tick ratio %g at %d Hz: the sampler samples itself; "
                  "again at %d Hz\n", process.c_str(), attempt, run.tick_ratio, hz, hz / 10);
      slowed = true;
      hz /= 10;
      ms *= 3;
      continue;
    }
    run.disturbed = run.tick_ratio < 0.85;
    run.tolerance = (run.disturbed ? 10 : 5) + (LockdepKernel() ? 3 : 0);
    for (const auto& [name, want] : nominal)
      run.disturbed |= std::abs(line->percent[name] - want) > 2;
    std::ostringstream note;
    note << "attempt " << attempt << " at " << hz << " Hz: tick ratio " << run.tick_ratio
         << ", workload split";
    for (const auto& [name, pct] : line->percent) note << " " << name << "=" << pct << "%";
    if (line->rusage_sys_pct >= 0) note << ", rusage system " << line->rusage_sys_pct << "%";
    run.note = note.str();
    std::printf("  [%s] %s%s\n", process.c_str(), run.note.c_str(),
                run.disturbed ? " (disturbed by the host)" : "");
    if (!run.disturbed) return run;
    if (!best.json || run.tick_ratio > best.tick_ratio) best = std::move(run);
  }
  return best;
}

// `pprof -top`'s table (Google's pprof, built from Debian's Go source: a
// reader independent of tprof): the total and each row's flat and cum.
struct PprofTop {
  uint64_t total = 0;
  std::map<std::string, uint64_t> flat, cum;
};
std::optional<PprofTop> ParsePprofTop(const std::string& out) {
  PprofTop t;
  std::smatch m;
  static const std::regex total(R"(of (\d+) total)");
  if (!std::regex_search(out, m, total)) return std::nullopt;
  t.total = std::stoull(m[1]);
  //       flat  flat%   sum%        cum   cum%
  //       1200 60.00% 60.00%       1200 60.00%  wl_alpha
  static const std::regex row(R"(^\s*(\d+)\s+\S+%\s+\S+%\s+(\d+)\s+\S+%\s+(.+?)\s*$)");
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (std::regex_match(line, m, row)) {
      t.flat[m[3]] += std::stoull(m[1]);
      t.cum[m[3]] += std::stoull(m[2]);
    }
  return t;
}

// Samples of one part of a workload, from the folded stacks
// ("process;caller;function count"): all of those whose stack passes
// through the part's function (what its thread CPU clock charges to it:
// the kernel time of interrupts that land in it included), and those whose
// leaf is in the part's own space (the function itself for a user part,
// any kernel frame for a kernel part).
struct PartSamples {
  uint64_t inclusive = 0, own_space = 0;
};
PartSamples FoldedPart(const std::string& folded, const std::string& function, bool kernel) {
  PartSamples part;
  std::istringstream in(folded);
  std::string line;
  while (std::getline(in, line)) {
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    const size_t process_end = line.find(';');  // the frames come after the process
    if (process_end >= space) continue;
    const std::string stack = line.substr(process_end, space - process_end) + ";";
    if (!Contains(stack, ";" + function + ";")) continue;
    const uint64_t n = std::stoull(line.substr(space + 1));
    const size_t leaf_start = line.rfind(';', space) + 1;
    const std::string leaf = line.substr(leaf_start, space - leaf_start);
    part.inclusive += n;
    if (kernel ? EndsWith(leaf, "_[k]") : leaf == function) part.own_space += n;
  }
  return part;
}

// The samples of the folded stacks that have `function` as one of their
// frames.
uint64_t FoldedThrough(const std::string& folded, const std::string& function) {
  return FoldedPart(folded, function, false).inclusive;
}

// (a) Three functions at 60:30:10 of the process's CPU time (as measured).
TEST_F(Profiler, SharesOfThreeFunctionsMatchTheWorkload) {
  SplitRun run = RecordUndisturbed(dir_, "--callers", "tprof-wl-shares", 2000, "tprof-wl-shares",
                                   {{"wl_alpha", 60}, {"wl_beta", 30}, {"wl_gamma", 10}});
  ASSERT_TRUE(run.json);
  SCOPED_TRACE(run.note);
  EXPECT_TRUE(Contains(run.result.out, "wl_alpha")) << "record prints the report:\n"
                                                    << run.result.out;
  const Json& j = *run.json;
  auto tables = FunctionTables(j, "tprof-wl-shares");
  ASSERT_EQ(tables.size(), 1u) << "one tprof-wl-shares process";
  const Json& pf = *tables[0];
  const uint64_t total = N(pf.at("samples"));
  EXPECT_GE(total, kMinSplitSamples) << "2 s of CPU at 1 kHz; tick ratio " << run.tick_ratio;
  // Of the process's samples, those outside the three (its startup, slow
  // in TCG, the vDSO and kernel sides of its clock reads, the sampler's
  // own interrupts) took 2-14% under TCG, the more the slower the host ran
  // the guest (arm64 beside another guest): so the split is checked between
  // the three, and the three must be what the process ran in its main
  // executable (nothing else there but main's loop).
  const uint64_t a = FunctionSamples(pf, "wl_alpha"), b = FunctionSamples(pf, "wl_beta"),
                 c = FunctionSamples(pf, "wl_gamma");
  const Json* process = ProcessRow(j, "tprof-wl-shares");
  ASSERT_TRUE(process);
  EXPECT_GE((a + b + c) * 100, N(process->at("user")) * 95)
      << "the three functions are what the process ran in its executable, of "
      << N(process->at("user")) << " samples there and " << total << " in all";
  // Between the three functions.
  const double alpha = Percent(a, a + b + c), beta = Percent(b, a + b + c),
               gamma = Percent(c, a + b + c);
  for (const auto& [fn, pct] : {std::pair{"wl_alpha", alpha}, {"wl_beta", beta},
                                {"wl_gamma", gamma}})
    EXPECT_NEAR(pct, ExpectedShare(run, fn), Tolerance(run, ExpectedShare(run, fn), a + b + c))
        << fn;
  for (const char* fn : {"wl_alpha", "wl_beta", "wl_gamma"}) {
    const Json* row = FunctionRow(pf, fn);
    ASSERT_TRUE(row) << fn;
    EXPECT_EQ((*row).at("kind").get<std::string>(), "main") << fn;
    EXPECT_TRUE(Contains((*row).at("source").get<std::string>(), "shares.c:"))
        << fn << " has no source line: " << (*row).at("source").get<std::string>();
  }
  // --callers: the folded stacks (whole stacks) name main as the caller of
  // the three.
  const uint32_t pid = static_cast<uint32_t>(N(pf.at("pid")));
  Result folded =
      Sh("tprofctl dump -i " + run.file + " --format folded --pid " + std::to_string(pid));
  ASSERT_EQ(folded.rc, 0) << folded.out;
  std::smatch m;
  static const std::regex via_main(R"((^|\n)tprof-wl-shares;(.*;)?main;wl_alpha (\d+)\n)");
  ASSERT_TRUE(std::regex_search(folded.out, m, via_main)) << folded.out;
  EXPECT_GT(std::stoull(m[3]), FunctionSamples(pf, "wl_alpha") / 2);
  // The process exported for pprof (--format pprof) and read by Google's
  // pprof: its total is the process's samples, the three functions' flat
  // counts are the report's, and main's cumulative count is that of the
  // folded stacks through main (the caller frames).
  const std::string pb = dir_.File("shares.pb.gz");
  Result exported = Sh("tprofctl dump -i " + run.file + " --format pprof --pid " +
                       std::to_string(pid) + " -o " + pb);
  ASSERT_EQ(exported.rc, 0) << exported.out;
  Result top = Sh("pprof -sample_index=samples -top -nodecount=100000 -nodefraction=0 " + pb);
  ASSERT_EQ(top.rc, 0) << top.out;
  auto table = ParsePprofTop(top.out);
  ASSERT_TRUE(table) << "no pprof -top table:\n" << top.out;
  EXPECT_EQ(table->total, total) << top.out;
  for (const char* fn : {"wl_alpha", "wl_beta", "wl_gamma"})
    EXPECT_EQ(table->flat[fn], FunctionSamples(pf, fn)) << fn << "\n" << top.out;
  EXPECT_GT(table->cum.at("main"), 0u) << top.out;
  EXPECT_EQ(table->cum.at("main"), FoldedThrough(folded.out, "main")) << top.out << "\n"
                                                                      << folded.out;
  EXPECT_TRUE(Contains(top.out, "File: tprof-wl-shares"))
      << "the main executable is pprof's mapping[0]:\n" << top.out;
  // -o writes any format to a file, the same bytes as stdout; pprof's
  // binary goes to a pipe too (only a terminal is refused).
  const std::string folded_file = dir_.File("shares.folded");
  Result to_file = Sh("tprofctl dump -i " + run.file + " --format folded --pid " +
                      std::to_string(pid) + " -o " + folded_file);
  ASSERT_EQ(to_file.rc, 0) << to_file.out;
  EXPECT_EQ(to_file.out, "") << "nothing on stdout with -o";
  std::ifstream folded_in(folded_file);
  std::stringstream folded_text;
  folded_text << folded_in.rdbuf();
  EXPECT_EQ(folded_text.str(), folded.out);
  Result piped = Sh("tprofctl dump -i " + run.file + " --format pprof | od -An -tx1 -N2");
  ASSERT_EQ(piped.rc, 0) << piped.out;
  EXPECT_TRUE(Contains(piped.out, "1f 8b")) << "gzip magic expected: " << piped.out;
  std::printf(
      "  [tprof-wl-shares] pprof -top: %llu total, flat wl_alpha %llu wl_beta %llu "
      "wl_gamma %llu, cum main %llu\n",
      static_cast<unsigned long long>(table->total),
      static_cast<unsigned long long>(table->flat.at("wl_alpha")),
      static_cast<unsigned long long>(table->flat.at("wl_beta")),
      static_cast<unsigned long long>(table->flat.at("wl_gamma")),
      static_cast<unsigned long long>(table->cum.at("main")));
  std::printf("  [tprof-wl-shares] profile: wl_alpha %.1f%% wl_beta %.1f%% wl_gamma %.1f%% of the "
              "three (%.1f%% of the process's %llu samples)\n",
              alpha, beta, gamma, Percent(a + b + c, total), static_cast<unsigned long long>(total));
}

// (b) Kernel / main executable / shared library at 30:40:30 (as measured).
TEST_F(Profiler, KernelUserSharedSplitMatchesTheWorkload) {
  SplitRun run = RecordUndisturbed(dir_, "--by process --callers", "tprof-wl-split", 1000,
                                   "tprof-wl-split", {{"main", 40}, {"lib", 30}, {"kernel", 30}});
  ASSERT_TRUE(run.json);
  SCOPED_TRACE(run.note);
  const Json& j = *run.json;
  const Json* p = ProcessRow(j, "tprof-wl-split");
  ASSERT_TRUE(p);
  const uint64_t total = N((*p).at("samples"));
  EXPECT_GE(total, kMinSplitSamples) << "1 s of CPU at 1 kHz; tick ratio " << run.tick_ratio;
  // [vdso] samples are unresolved (no MAP record for it), a few at most.
  EXPECT_LE(N((*p).at("unresolved")) * 100, total * 2);

  auto tables = FunctionTables(j, "tprof-wl-split");
  ASSERT_EQ(tables.size(), 1u);
  const Json& pf = *tables[0];
  const Json* main_spin = FunctionRow(pf, "wl_main_spin");
  const Json* lib_spin = FunctionRow(pf, "wl_lib_spin");
  ASSERT_TRUE(main_spin && lib_spin);
  EXPECT_EQ((*main_spin).at("kind").get<std::string>(), "main");
  EXPECT_TRUE(EndsWith((*main_spin).at("object").get<std::string>(), "/tprof-wl-split"))
      << (*main_spin).at("object").get<std::string>();
  EXPECT_EQ((*lib_spin).at("kind").get<std::string>(), "shared");
  EXPECT_TRUE(EndsWith((*lib_spin).at("object").get<std::string>(), "/libtprofwl.so"))
      << (*lib_spin).at("object").get<std::string>();
  // The function rows' spaces add up to the process's columns.
  uint64_t main_space = 0, lib_space = 0, kernel_space = 0, kernel_resolved = 0;
  for (const Json& f : pf.at("functions")) {
    const std::string& kind = f.at("kind").get<std::string>();
    if (kind == "main") main_space += N(f.at("samples"));
    if (kind == "shared" &&
        f.at("object").get<std::string>() == (*lib_spin).at("object").get<std::string>())
      lib_space += N(f.at("samples"));
    if (kind == "kernel" || kind == "module") {
      EXPECT_TRUE(f.at("space").get<std::string>() == "kernel" ||
                  f.at("space").get<std::string>().rfind("module:", 0) == 0)
          << f.at("space").get<std::string>();
      kernel_space += N(f.at("samples"));
      if (f.at("resolved").get<bool>()) kernel_resolved += N(f.at("samples"));
    }
  }
  EXPECT_EQ(kernel_space, N((*p).at("kernel")));
  EXPECT_EQ(main_space, N((*p).at("user")));
  EXPECT_GE(kernel_resolved, kernel_space * 95 / 100) << "root sees kernel symbols";
  EXPECT_TRUE(j.at("kernel_symbols_available").get<bool>());
  // Each user space is (nearly) its named function.
  EXPECT_GE(N((*main_spin).at("samples")) * 100, main_space * 95);
  EXPECT_GE(N((*lib_spin).at("samples")) * 100, lib_space * 95);

  // Each part's samples, by the stacks, against the CPU time the workload
  // measured in it. Its thread CPU clock charges everything that runs on
  // the thread inside a part (the interrupts that land in a user loop, the
  // return from a syscall) to that part, and so do the stacks. The kernel
  // space's share of the process is no measure of the kernel part: under
  // arm64 TCG it holds 6-8 points more (exec, the sampler's interrupts).
  // Nor is getrusage's system share, which the kernel splits by what its
  // 250 Hz tick interrupted: 26-31% in six 6.12 runs whose kernel part
  // measured 30.1% (the CI failure of 0618908).
  const uint32_t pid = static_cast<uint32_t>(N(pf.at("pid")));
  Result folded =
      Sh("tprofctl dump -i " + run.file + " --format folded --pid " + std::to_string(pid));
  ASSERT_EQ(folded.rc, 0) << folded.out;
  const std::map<std::string, PartSamples> parts = {
      {"main", FoldedPart(folded.out, "wl_main_spin", false)},
      {"lib", FoldedPart(folded.out, "wl_lib_spin", false)},
      {"kernel", FoldedPart(folded.out, "wl_kernel_spin", true)}};
  uint64_t three = 0;
  for (const auto& [name, part] : parts) three += part.inclusive;
  ASSERT_GE(three, kMinSplitSamples) << folded.out;
  std::printf("  [tprof-wl-split] profile by stacks:");
  for (const auto& [name, part] : parts) {
    const double pct = Percent(part.inclusive, three);
    EXPECT_NEAR(pct, ExpectedShare(run, name), Tolerance(run, ExpectedShare(run, name), three))
        << name;
    // Most of a part is in its own space: a user loop's code in its
    // object, the read of /dev/zero in the kernel. Under TCG the rest (the
    // interrupts in a user loop, libc's read around the syscall) was 1-5%
    // of a user part and 2-11% of the kernel one; a fifth elsewhere is a
    // space gone wrong.
    EXPECT_GE(part.own_space * 10, part.inclusive * 8)
        << name << ": " << part.own_space << " of " << part.inclusive
        << " samples in its own space";
    std::printf(" %s %.1f%% (%.0f%% in its space)", name.c_str(), pct,
                Percent(part.own_space, part.inclusive));
  }
  std::printf(" of %llu\n", static_cast<unsigned long long>(three));
}

// (c) Short-lived processes keep their own name and code.
TEST_F(Profiler, ShortLivedChildrenAreNamedAndResolved) {
  // Each child burns 40 ms of CPU (by its clock) in wl_child_work after
  // ~20 ms of dynamic loading in TCG; under TCG wl_child_work gets only
  // 20-35 samples (host stalls and translation collapse timer ticks), so
  // the loader can come close. A run with fewer than 8 children topped by
  // wl_child_work is retried once; if it happens again, each child must
  // still have wl_child_work as the top function of its main executable.
  for (int attempt = 1; attempt <= 2; ++attempt) {
    const std::string file = "spawn" + std::to_string(attempt) + ".data";
    Result r = Record(file, "--by process", "tprof-wl-spawn --children 10 --ms-each 40");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(Contains(r.out, "0 failed")) << r.out;
    auto j = DumpJson(dir_.File(file));
    ASSERT_TRUE(j);
    std::set<uint64_t> top, top_of_main;
    std::vector<uint64_t> work;
    std::string seen;
    for (const Json* pf : FunctionTables(*j, "tprof-wl-child")) {
      const auto& rows = (*pf).at("functions");
      const uint64_t pid = N((*pf).at("pid"));
      std::string first = rows.empty() ? "(none)" : rows[0].at("function").get<std::string>();
      seen += " " + std::to_string(pid) + ":" + first;
      if (first == "wl_child_work" && rows[0].at("kind").get<std::string>() == "main")
        top.insert(pid);
      for (const Json& f : rows) {
        if (f.at("kind").get<std::string>() != "main") continue;
        if (f.at("function").get<std::string>() == "wl_child_work") top_of_main.insert(pid);
        break;
      }
      work.push_back(FunctionSamples(*pf, "wl_child_work"));
    }
    for (const Json& p : (*j).at("processes"))
      if (p.at("name").get<std::string>() == "tprof-wl-child") {
        EXPECT_TRUE(p.at("exited").get<bool>()) << N(p.at("pid"));
      }
    std::sort(work.begin(), work.end());
    std::printf("  [tprof-wl-child] attempt %d: %zu children, %zu topped by wl_child_work, "
                "median %llu samples in it\n",
                attempt, work.size(), top.size(),
                static_cast<unsigned long long>(work.empty() ? 0 : work[work.size() / 2]));
    if (top.size() >= 8) return;
    if (attempt == 2) {
      EXPECT_GE(top_of_main.size(), 8u) << "children (pid:top function):" << seen;
    }
  }
}

// (d) JIT code named through /tmp/perf-PID.map.
TEST_F(Profiler, JitCodeIsNamedFromThePerfMap) {
  // At 1 kHz, unless most of the process's samples are kernel ones: then
  // the sample handler samples itself (the KASAN kernel under TCG) and the
  // run is repeated at 100 Hz, three times longer (as RecordUndisturbed).
  for (int hz : {1000, 100}) {
    const std::string file = "jit" + std::to_string(hz) + ".data";
    Result r = Record(file, "--by process --freq " + std::to_string(hz),
                      "tprof-wl-jit --ms " + std::to_string(hz == 1000 ? 500 : 1500));
    ASSERT_EQ(r.rc, 0) << r.out;
    auto j = DumpJson(dir_.File(file));
    ASSERT_TRUE(j);
    auto tables = FunctionTables(*j, "tprof-wl-jit");
    ASSERT_EQ(tables.size(), 1u);
    const Json& pf = *tables[0];
    ::unlink(("/tmp/perf-" + std::to_string(N(pf.at("pid"))) + ".map").c_str());
    const Json* p = ProcessRow(*j, "tprof-wl-jit");
    ASSERT_TRUE(p);
    if (hz == 1000 && N((*p).at("kernel")) * 2 > N((*p).at("samples"))) {
      std::printf(
          "  [tprof-wl-jit] %llu of %llu samples in the kernel at 1 kHz: the sampler "
          "samples itself; again at 100 Hz\n",
          static_cast<unsigned long long>(N((*p).at("kernel"))),
          static_cast<unsigned long long>(N((*p).at("samples"))));
      continue;
    }
    const Json* hot = FunctionRow(pf, "jit_hot_loop");
    ASSERT_TRUE(hot) << "jit_hot_loop not in the report";
    EXPECT_EQ((*hot).at("kind").get<std::string>(), "jit");
    // Of the process's user-mode samples (its kernel share is the kernel's
    // cost, large in the KASAN kernel), most are in the JIT loop.
    EXPECT_GT(N((*hot).at("samples")) * 2, N(pf.at("samples")) - N((*p).at("kernel")))
        << "jit_hot_loop should have most of the process's user samples";
    EXPECT_EQ(N((*p).at("jit")), N((*hot).at("samples")));
    return;
  }
}

// (d2) [vdso] is no file: the recorder stores the kernel's vDSO image and the
// report names the vDSO's functions from it. The workload reads
// CLOCK_MONOTONIC in a loop; whatever the guest's clocksource, the vDSO's
// clock_gettime runs on every read (it falls back to the system call from
// there), so some of its user samples land in the vDSO, and most of them
// must be named after the vDSO's clock_gettime. The image has only its
// dynamic symbols: static helpers the compiler kept out of line (6.1's at
// 0x6b0: 11 of 199 samples) stay "[vdso]+0x<address>", a row per address.
TEST_F(Profiler, VdsoSamplesAreNamedFromTheRecordedImage) {
  Result r = Record("vdso.data", "--freq 1000", "tprof-wl-vdso --ms 800");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = DumpJson(dir_.File("vdso.data"));
  ASSERT_TRUE(j);
  auto tables = FunctionTables(*j, "tprof-wl-vdso");
  ASSERT_EQ(tables.size(), 1u);
  uint64_t named = 0, unnamed = 0;
  std::string rows;
  for (const Json& f : tables[0]->at("functions")) {
    const std::string space = f.at("space").get<std::string>();
    const std::string fn = f.at("function").get<std::string>();
    if (space != "shared:[vdso]") continue;
    rows += fn + " " + std::to_string(N(f.at("samples"))) + "\n";
    if (fn.find("clock_gettime") != std::string::npos || fn.find("__vdso_") != std::string::npos) {
      named += N(f.at("samples"));
    } else {
      unnamed += N(f.at("samples"));
      EXPECT_EQ(fn.rfind("[vdso]+0x", 0), 0u) << "an unnamed vDSO address: " << fn;
    }
  }
  EXPECT_GT(named, 0u) << "no vDSO samples named after clock_gettime:\n" << rows;
  EXPECT_GT(named, unnamed) << "most vDSO samples are in its clock_gettime:\n" << rows;
  std::printf("  [tprof-wl-vdso] %llu samples in the vDSO's functions\n",
              static_cast<unsigned long long>(named));
}

// (d3) A function forced inline (always_inline, -O2 -g) has no symbol of
// its own: DWARF's inlined instance names it, under its caller, in the
// folded stacks.
TEST_F(Profiler, InlinedFunctionsAreFramesOfTheirCaller) {
  Result r = Record("inline.data", "--freq 1000", "tprof-wl-inline --ms 600");
  ASSERT_EQ(r.rc, 0) << r.out;
  Result folded = Sh("tprofctl dump -i " + dir_.File("inline.data") + " --format folded");
  ASSERT_EQ(folded.rc, 0) << folded.out;
  // Lines are "frames count"; the process's user-mode samples (a kernel
  // leaf ends in _[k]: in the KASAN kernel the sampler's own time took 60%
  // of the process's samples) and those in the inlined loop.
  uint64_t inlined = 0, process = 0;
  std::istringstream in(folded.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("tprof-wl-inline;", 0) != 0) continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    if (space >= 4 && line.compare(space - 4, 4, "_[k]") == 0) continue;  // a kernel leaf
    uint64_t n = std::stoull(line.substr(space + 1));
    process += n;
    if (line.find("wl_inline_outer;wl_inline_hot (inlined) ") != std::string::npos) inlined += n;
  }
  ASSERT_GT(process, 0u) << folded.out;
  EXPECT_GT(inlined * 2, process) << "most of the process's user samples are in the inlined loop:\n"
                                  << folded.out;
  std::printf("  [tprof-wl-inline] %llu of %llu samples in wl_inline_hot (inlined)\n",
              static_cast<unsigned long long>(inlined), static_cast<unsigned long long>(process));
}

// (e) Lost samples: the recorder is frozen (SIGSTOP) while tiny buffers
// fill at 20 kHz, so loss is certain; every report shows the same number
// the kernel counted.
TEST_F(Profiler, LostSamplesAreReportedAsTheKernelCountedThem) {
  // 10 kHz on two CPUs for 100 ms of workload: ~2000 samples against ~150
  // a CPU that 4 KiB halves hold (20 kHz made the sample interrupts most of
  // a TCG guest's time: 100 s for this test in the arm64 and debug kernels).
  Result start = Sh("cd " + dir_.path() + " && tprofctl start --freq 10000 --buffer-kb 4 -o lost.data");
  ASSERT_EQ(start.rc, 0) << start.out;
  pid_t recorder = RecorderPid();
  ASSERT_GT(recorder, 0);
  ASSERT_EQ(::kill(recorder, SIGSTOP), 0);
  Result load = Sh("tprof-wl-shares --ms 100 >/dev/null & tprof-wl-shares --ms 100 >/dev/null; wait");
  ASSERT_EQ(::kill(recorder, SIGCONT), 0);
  EXPECT_EQ(load.rc, 0) << load.out;
  Result stop = Sh("tprofctl stop");
  ASSERT_EQ(stop.rc, 0) << stop.out;
  auto written = ParseWritten(stop.out);
  ASSERT_TRUE(written) << stop.out;
  EXPECT_GT(written->lost, 0u) << "a frozen recorder with 4 KiB buffers at 10 kHz lost nothing?";

  auto j = DumpJson(dir_.File("lost.data"));
  ASSERT_TRUE(j);
  EXPECT_EQ(N((*j).at("lost_samples")), written->lost);
  EXPECT_EQ(N((*j).at("samples")), written->samples);
  Result text = Sh("tprofctl dump -i " + dir_.File("lost.data") + " --by process");
  ASSERT_EQ(text.rc, 0) << text.out;
  auto row = LostRow(text.out);
  ASSERT_TRUE(row) << "no [lost] row:\n" << text.out;
  EXPECT_EQ(*row, written->lost) << text.out;
  EXPECT_TRUE(Contains(text.out, std::to_string(written->lost) + " lost)")) << text.out;
  // The LOST records in the stream agree with the control-area totals.
  auto p = ReadProfile(dir_.File("lost.data"));
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->lost_samples_in_records, p->TotalLostSamples());

  // The same through `record` at 10 kHz with 4 KiB halves on two busy
  // CPUs: whether it loses depends on the scheduler, the accounting may not.
  Result rec = Record("rec.data", "--freq 10000 --buffer-kb 4 --by process",
                   "sh -c 'tprof-wl-shares --ms 100 & tprof-wl-shares --ms 100; wait'");
  ASSERT_EQ(rec.rc, 0) << rec.out;
  auto j2 = DumpJson(dir_.File("rec.data"));
  ASSERT_TRUE(j2);
  auto row2 = LostRow(rec.out);
  ASSERT_TRUE(row2) << "no [lost] row:\n" << rec.out;
  EXPECT_EQ(*row2, N((*j2).at("lost_samples")));
  RecordProperty("record_lost", std::to_string(*row2));
}

// (f) An idle machine is idle in the profile (wait state is sampled).
// The guest's idle and total CPU time from /proc/stat (USER_HZ ticks).
std::pair<uint64_t, uint64_t> CpuIdleAndTotal() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  uint64_t v, idle = 0, total = 0;
  in >> cpu;
  for (int i = 0; i < 8 && in >> v; ++i) {
    total += v;
    if (i == 3 || i == 4) idle += v;  // idle, iowait
  }
  return {idle, total};
}

TEST_F(Profiler, IdleGuestIsMostlyWaitState) {
  // How idle the guest really was meanwhile (the recorder's own work, slow
  // in the KASAN kernel, is not idle) is what the profile must show, not a
  // fixed share.
  // A longer sleep where the recorder's start and end (slow in the debug
  // kernel) kept the guest busy for most of it: the test needs a mostly
  // idle machine (60% of /proc/stat's time) to say it is mostly idle.
  Result r;
  double stat_idle = 0;
  (void)RecordUntil(1000, 60, [&](unsigned ms) -> uint64_t {
    const auto before = CpuIdleAndTotal();
    r = Record("idle.data", "-a --by process", "sleep " + std::to_string(ms / 1000));  // the machine, not sleep
    const auto after = CpuIdleAndTotal();
    stat_idle = after.second > before.second ? Percent(after.first - before.first, after.second - before.second) : 0;
    return r.rc == 0 ? uint64_t(stat_idle) : 0;
  });
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "[idle/wait]")) << r.out;
  auto j = DumpJson(dir_.File("idle.data"));
  ASSERT_TRUE(j);
  const double profile_idle = (*j).at("idle").at("percent").get<double>();
  EXPECT_GT(profile_idle, 50) << "idle samples " << N((*j).at("idle").at("samples")) << " of "
                              << N((*j).at("samples_taken")) << "; /proc/stat: " << stat_idle
                              << "% idle";
  // /proc/stat's interval also holds the recorder's start and its writing
  // of the profile, busier than the session itself: a lower bound.
  EXPECT_GE(profile_idle, stat_idle - 15) << "the profile's wait state vs /proc/stat's idle time";
}

// (g) start/stop/start, and the mistakes a user makes with them.
// `tprofctl stop` may signal the recorder the moment `start` has returned,
// before the recorder's event loop handles SIGTERM: the signal must wait for
// it, not kill it without a profile (seen once in the 6.12 guest: stop said
// "no result; was it killed?" in LostSamplesAreReportedAsTheKernelCountedThem,
// whose recorder, stopped right after start, met the SIGTERM as it resumed).
// A race, so several rounds, each signalled as early as this test can.
TEST_F(Profiler, StopAtOnceAfterStartStillWritesTheProfile) {
  const std::string cd = "cd " + dir_.path() + " && ";
  for (int round = 0; round < 3; ++round) {
    std::string name = "at-once" + std::to_string(round) + ".data";
    Result both = Sh(cd + "tprofctl start -o " + name + " >/dev/null && tprofctl stop");
    ASSERT_EQ(both.rc, 0) << "round " << round << ": " << both.out;
    auto w = ParseWritten(both.out);
    ASSERT_TRUE(w) << both.out;
    EXPECT_EQ(w->path, dir_.File(name));

    // Stopped as soon as its pid is known, then continued and stopped.
    name = "stopped" + std::to_string(round) + ".data";
    Result start = Sh(cd + "tprofctl start -o " + name);
    ASSERT_EQ(start.rc, 0) << start.out;
    pid_t recorder = RecorderPid();
    ASSERT_GT(recorder, 0);
    ASSERT_EQ(::kill(recorder, SIGSTOP), 0);
    ASSERT_EQ(::kill(recorder, SIGCONT), 0);
    Result stop = Sh("tprofctl stop");
    ASSERT_EQ(stop.rc, 0) << "round " << round << ": " << stop.out;
    EXPECT_TRUE(std::filesystem::exists(dir_.File(name))) << name;
  }
}

TEST_F(Profiler, StartStopStartAndItsErrors) {
  const std::string cd = "cd " + dir_.path() + " && ";
  Result a = Sh(cd + "tprofctl start -o A.data");
  ASSERT_EQ(a.rc, 0) << a.out;
  EXPECT_TRUE(Contains(a.out, "recording")) << a.out;
  Result twice = Sh(cd + "tprofctl start -o X.data");
  EXPECT_EQ(twice.rc, 1) << twice.out;
  EXPECT_TRUE(Contains(twice.out, "already running")) << twice.out;
  EXPECT_EQ(Sh("tprof-wl-shares --ms 200").rc, 0);
  Result stop = Sh("tprofctl stop");
  ASSERT_EQ(stop.rc, 0) << stop.out;
  auto w = ParseWritten(stop.out);
  ASSERT_TRUE(w) << stop.out;
  EXPECT_EQ(w->path, dir_.File("A.data"));
  EXPECT_FALSE(std::filesystem::exists(dir_.File("X.data")));

  Result again = Sh("tprofctl stop");
  EXPECT_EQ(again.rc, 1) << again.out;
  EXPECT_TRUE(Contains(again.out, "no recorder is running")) << again.out;

  {  // Another program holds the one session: start says so.
    auto held = SamplingSession::Start(SamplingOptions{});
    ASSERT_TRUE(held) << held.error().message();
    Result busy = Sh(cd + "tprofctl start -o Y.data");
    EXPECT_EQ(busy.rc, 1) << busy.out;
    EXPECT_TRUE(Contains(busy.out, "already running")) << busy.out;
    Result busy_record = Record("Z.data", "", "true");
    EXPECT_EQ(busy_record.rc, 1) << busy_record.out;
    EXPECT_TRUE(Contains(busy_record.out, "already running")) << busy_record.out;
    EXPECT_EQ(RecorderPid() > 0 && !ProcessGone(RecorderPid()), false);
  }

  Result b = Sh(cd + "tprofctl start -o B.data");
  ASSERT_EQ(b.rc, 0) << b.out;
  EXPECT_EQ(Sh("tprof-wl-shares --ms 200").rc, 0);
  stop = Sh("tprofctl stop");
  ASSERT_EQ(stop.rc, 0) << stop.out;
  for (const char* name : {"A.data", "B.data"}) {
    auto j = DumpJson(dir_.File(name));
    ASSERT_TRUE(j) << name;
    EXPECT_GT(N((*j).at("samples")), 0u) << name;
    EXPECT_EQ((*j).at("attributes").at("pid").get<std::string>(), "all") << name;
    const Json* p = ProcessRow(*j, "tprof-wl-shares");
    ASSERT_TRUE(p) << name << " has no tprof-wl-shares";
    // This test is about the start/stop states, not accuracy (the shares
    // tests are): the 200 ms burn must be in the profile, substantially:
    // a tenth of what 200 ms of CPU bring at the rate the session really
    // took samples (20 at 1 kHz). A starved TCG vCPU takes fewer ticks for
    // the same CPU time (fewer than 100 once under 4x host overload), and
    // no share of the other samples is stable either (in the debug kernel
    // tprofctl itself took 90% of them).
    const double cpu_seconds = double(N((*j).at("duration_ns"))) / 1e9 * double((*j).at("cpus").size());
    ASSERT_GT(cpu_seconds, 0) << name;
    const double per_cpu_second = double(N((*j).at("samples_taken"))) / cpu_seconds;
    const uint64_t floor = std::max<uint64_t>(1, uint64_t(0.2 * per_cpu_second / 10));
    EXPECT_GE(N((*p).at("samples")), floor)
        << name << ": " << per_cpu_second << " samples per CPU-second over " << cpu_seconds << " CPU-seconds";
  }
}

// tprofctl top follows one process live: with 80% of the workload's CPU in
// wl_alpha, each refresh's first row of the workload's own functions is
// wl_alpha (on a busy or debug guest the kernel's switch path can top a
// half-second frame); and tprofctl status shows the running session
// (whoever owns it) with its samples and rate.
TEST_F(Profiler, TopShowsTheHeaviestFunctionOfEachInterval) {
  Result r = Sh("tprof-wl-shares --ms 3600000 --shares 80,10,10 >/dev/null & p=$!; "
                "tprofctl top -p $p --batch -d 0.5 -n 4 --rows 5 > " + dir_.File("top.txt") +
                " & t=$!; for i in $(seq 200); do s=$(tprofctl status --rate-ms 300); "
                "case \"$s\" in *'sampling: running'*) echo \"$s\"; break;; esac; sleep 0.05; done; "
                "wait $t; rc=$?; kill $p; exit $rc");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "sampling: running, process ")) << r.out;
  EXPECT_TRUE(Contains(r.out, " samples/s over ")) << r.out;
  std::string top = ReadFileOrEmpty(dir_.File("top.txt"));
  size_t frames = 0;
  for (size_t at = top.find("tprofctl top: "); at != std::string::npos;
       at = top.find("tprofctl top: ", at + 1)) {
    ++frames;
    size_t columns = top.find("FUNCTION", at);
    ASSERT_NE(columns, std::string::npos) << top;
    // The frame's rows, up to its blank line or the next frame.
    std::string row;
    for (size_t line = top.find('\n', columns) + 1; line != 0 && line < top.size();) {
      size_t end = top.find('\n', line);
      std::string text = top.substr(line, end == std::string::npos ? std::string::npos : end - line);
      if (text.empty() || Contains(text, "tprofctl top: ")) break;
      if (Contains(text, "wl_")) {
        row = text;
        break;
      }
      line = end == std::string::npos ? 0 : end + 1;
    }
    EXPECT_TRUE(Contains(row, "wl_alpha")) << "frame " << frames << ": " << row << "\n" << top;
  }
  EXPECT_EQ(frames, 4u) << top;
}

// A recording of every CPU at a rate the guest cannot take (100 kHz per
// CPU under TCG) says so on stderr and in the JSON report; one at 100 Hz
// does not.
TEST_F(Profiler, AnUnreachableRateIsReportedAsLow) {
  Result fast = Record("fast.data", "-a -F 100000 --by process", "tprof-wl-shares --ms 1500");
  ASSERT_EQ(fast.rc, 0) << fast.out;
  auto j = DumpJson(dir_.File("fast.data"));
  ASSERT_TRUE(j);
  // Where perf's limit throttled the recording, that is the reason given:
  // lowered during it ("perf: interrupt took too long", as 7.2 does on
  // emulated arm64), or already below -F at start (an earlier test of this
  // boot made the kernel lower it). Otherwise the machine's own rate is.
  if (j->contains("sampling_throttle") && j->at("sampling_throttle").at("throttled").get<bool>()) {
    const Json& t = j->at("sampling_throttle");
    if (N(t.at("max_sample_rate_at_start")) > N(t.at("max_sample_rate_at_end"))) {
      EXPECT_TRUE(Contains(fast.out, "the kernel lowered kernel.perf_event_max_sample_rate from"))
          << fast.out;
      EXPECT_TRUE(Contains(fast.out, "record again with -F")) << fast.out;
    } else {
      EXPECT_TRUE(Contains(fast.out, "-F 100000 is above kernel.perf_event_max_sample_rate ("))
          << fast.out;
      EXPECT_TRUE(Contains(fast.out, "record with -F")) << fast.out;
    }
  } else {
    EXPECT_TRUE(Contains(fast.out, "per CPU were taken of the 100000 asked for")) << fast.out;
    EXPECT_TRUE(Contains(fast.out, "record again with a lower -F")) << fast.out;
  }
  ASSERT_TRUE((*j).contains("sampling_rate")) << "a recording of every CPU states its rate";
  EXPECT_TRUE((*j).at("sampling_rate").at("low").get<bool>());
  EXPECT_LT((*j).at("sampling_rate").at("achieved_hz").get<double>(), 50000);

  Result slow = Record("slow.data", "-a -F 100 --by process", "tprof-wl-shares --ms 1500");
  ASSERT_EQ(slow.rc, 0) << slow.out;
  EXPECT_FALSE(Contains(slow.out, "warning:")) << slow.out;
  j = DumpJson(dir_.File("slow.data"));
  ASSERT_TRUE(j);
  ASSERT_TRUE((*j).contains("sampling_rate"));
  EXPECT_FALSE((*j).at("sampling_rate").at("low").get<bool>())
      << (*j).at("sampling_rate").dump();
  // A recording of every process names its recorder, whose samples the
  // report counts (and warns about from a twentieth on).
  const std::string recorder = (*j).at("attributes").value("recorder_pid", std::string());
  ASSERT_FALSE(recorder.empty()) << (*j).at("attributes").dump();
  uint64_t own = 0;
  for (const Json& p : (*j).at("processes"))
    if (std::to_string(N(p.at("pid"))) == recorder) own = N(p.at("samples"));
  EXPECT_EQ(N((*j).at("sample_shares").at("recorder")), own) << (*j).at("sample_shares").dump();
}

// perf's throttling, made to happen: kernel.perf_event_max_sample_rate
// at 1000 Hz and -F 4000. perf stops a counter for the rest of a tick
// once it has fired more than the limit allows in it (4 at HZ 250), so
// about 1000 of the 4000 asked are taken per busy CPU; the recording says
// why on stderr and in the JSON. The limit is put back whatever happens.
TEST_F(Profiler, PerfThrottlingIsReported) {
  const std::string limit = "/proc/sys/kernel/perf_event_max_sample_rate";
  Result r = Sh("old=$(cat " + limit + ") || exit 1; echo 1000 > " + limit +
                " || exit 1; tprofctl record -a -F 4000 --by process --top 1 -o " +
                dir_.File("th.data") + " -- tprof-wl-shares --ms 1500 >/dev/null; rc=$?; echo $old > " +
                limit + "; exit $rc");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = DumpJson(dir_.File("th.data"));
  ASSERT_TRUE(j);
  ASSERT_TRUE(j->contains("sampling_throttle")) << j->dump();
  EXPECT_TRUE(j->at("sampling_throttle").at("throttled").get<bool>());
  EXPECT_EQ(N(j->at("sampling_throttle").at("max_sample_rate_at_start")), 1000u);
  // The kernel may lower the limit further while it throttles (a slow
  // emulated handler): then the warning says so.
  const uint64_t at_end = N(j->at("sampling_throttle").at("max_sample_rate_at_end"));
  EXPECT_LE(at_end, 1000u);
  if (at_end == 1000)
    EXPECT_TRUE(Contains(r.out, "-F 4000 is above kernel.perf_event_max_sample_rate (1000 Hz)"))
        << r.out;
  else
    EXPECT_TRUE(Contains(r.out, "lowered kernel.perf_event_max_sample_rate from 1000 to " +
                                    std::to_string(at_end)))
        << r.out;
  // The workload's CPU took about a sample a millisecond, not four.
  const Json* p = ProcessRow(*j, "tprof-wl-shares");
  ASSERT_TRUE(p);
  EXPECT_LT(N(p->at("samples")), 2 * 1500u) << "perf did not throttle the sampler";
  Result unthrottled = Sh("cat " + limit);
  EXPECT_NE(unthrottled.out, "1000\n") << "the limit was not put back";
}

// top of every process for 5 refreshes at -d 1: its own samples (it
// drains and symbolizes every interval) are one labelled line, never a
// row; no refresh claims more than the CPUs' clock rate plus 10% (the
// first said 1.7 times that when it counted from after reading kallsyms),
// and none lost more than 1% of its samples (it lost thousands when it
// re-read symbols every refresh; a refresh late on a loaded host lost 28
// of 3,860 once in CI's 6.1 guest, its 64 KiB halves full). A lower rate
// and a late refresh are the host's load (an emulated CPU's timer fires
// late), not top's: not asserted.
TEST_F(Profiler, TopLeavesItselfOutAndCountsFromTheStart) {
  Result r = Sh("tprof-wl-shares --ms 3600000 >/dev/null & p=$!; tprofctl top --batch -d 1 -n 5 "
                "--by process --rows 50 > " + dir_.File("top.txt") + "; rc=$?; kill $p; exit $rc");
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string top = ReadFileOrEmpty(dir_.File("top.txt"));
  const double ncpus = double(::sysconf(_SC_NPROCESSORS_ONLN));
  size_t frames = 0;
  std::istringstream in(top);
  for (std::string line; std::getline(in, line);) {
    unsigned long long samples = 0;
    double seconds = 0, rate = 0;
    unsigned long long lost = 0;
    if (std::sscanf(line.c_str(), "tprofctl top: %llu samples in %lf s (%lf/s), %llu lost",
                    &samples, &seconds, &rate, &lost) == 4) {
      ++frames;
      EXPECT_GT(seconds, 0.0) << line << "\n" << top;
      EXPECT_LE(rate, 1.1 * 1000 * ncpus) << line << "\n" << top;
      EXPECT_LE(lost * 100, samples) << line << "\n" << top;
      continue;
    }
    std::istringstream row(line);
    std::string count, share, pid, name;
    row >> count >> share >> pid >> name;
    EXPECT_NE(name, "tprofctl") << "top's own process is a row:\n" << top;
  }
  EXPECT_EQ(frames, 5u) << top;
  size_t labelled = 0;
  for (size_t at = top.find("[tprofctl top]"); at != std::string::npos; at = top.find("[tprofctl top]", at + 1))
    ++labelled;
  EXPECT_EQ(labelled, 5u) << top;
}

// top -g: each function's CHILDREN are the samples whose stack holds it.
// (And top -C: the chosen CPUs alone are sampled.)
// In tprof-wl-calltree's tree (main -> wl_a -> wl_b -> wl_d, wl_a -> wl_c)
// wl_a holds every sample of the four functions, where its own are a
// tenth of them; without stacks CHILDREN would be SELF.
TEST_F(Profiler, TopWithCallersShowsInclusiveSamples) {
  Result r = Sh("tprof-wl-calltree --ms 3600000 >/dev/null & p=$!; "
                "tprofctl top -g -p $p --batch -d 1 -n 3 --rows 30 > " + dir_.File("top.txt") +
                "; rc=$?; kill $p; exit $rc");
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string top = ReadFileOrEmpty(dir_.File("top.txt"));
  size_t frames = 0;
  std::map<std::string, std::pair<uint64_t, uint64_t>> rows;  // function: children, self
  auto check_frame = [&] {
    if (rows.empty()) return;
    SCOPED_TRACE("frame " + std::to_string(frames) + "\n" + top);
    uint64_t four = 0;
    for (const char* f : {"wl_a", "wl_b", "wl_c", "wl_d"}) four += rows[f].second;
    EXPECT_GT(four, 0u);
    EXPECT_GE(rows["wl_a"].first, four * 9 / 10) << "wl_a's stack holds the others' samples";
    EXPECT_GT(rows["wl_a"].first, 3 * rows["wl_a"].second) << "CHILDREN is not SELF";
    EXPECT_GE(rows["wl_b"].first, rows["wl_d"].second * 9 / 10) << "wl_b calls wl_d";
    rows.clear();
  };
  std::istringstream in(top);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("tprofctl top: ")) {
      check_frame();
      ++frames;
      continue;
    }
    if (line.starts_with("CHILDREN") || Contains(line, "SAMPLES")) {
      EXPECT_TRUE(line.starts_with("CHILDREN")) << line;
      continue;
    }
    std::istringstream row(line);
    unsigned long long children = 0, self = 0;
    std::string share, self_share, pid, process, function;
    if (row >> children >> share >> self >> self_share >> pid >> process >> function)
      rows[function] = {children, self};
  }
  check_frame();
  EXPECT_EQ(frames, 3u) << top;
  Result usage = Sh("tprofctl top -g --by process -n 1 2>&1");
  EXPECT_EQ(usage.rc, 2) << usage.out;
  usage = Sh("tprofctl top -C 4096 -n 1 2>&1");
  EXPECT_EQ(usage.rc, 2) << usage.out;
  EXPECT_TRUE(Contains(usage.out, "no CPU 4096")) << usage.out;
  // -C: a program pinned to CPU 0 is never a row of CPU 1's view.
  if (::sysconf(_SC_NPROCESSORS_ONLN) > 1) {
    Result one = Sh("taskset 1 tprof-wl-shares --ms 3600000 >/dev/null & p=$!; "
                    "tprofctl top -C 1 --batch -d 0.5 -n 2 --by process; rc=$?; kill $p; exit $rc");
    ASSERT_EQ(one.rc, 0) << one.out;
    EXPECT_TRUE(Contains(one.out, "refresh 2")) << one.out;
    EXPECT_FALSE(Contains(one.out, "tprof-wl-shares")) << one.out;
  }
}

// `tprofctl diff` of two runs of tprof-wl-shares with the split turned
// around (80/10/10, then 10/10/80): wl_alpha's share falls and wl_gamma's
// rises, nominally eightfold, and they are the process's largest changes;
// wl_beta stays. Shares are of all samples (idle included), so the test
// compares each function's two shares rather than fixed points.
TEST_F(Profiler, DiffShowsTheFunctionsWhoseSharesMoved) {
  for (const auto& [name, shares] : {std::pair<std::string, std::string>{"A.data", "80,10,10"},
                                     {"B.data", "10,10,80"}}) {
    Result r = Record(name, "--by process --top 1",
                      "tprof-wl-shares --ms 1000 --shares " + shares);
    ASSERT_EQ(r.rc, 0) << r.out;
  }
  const std::string cd = "cd " + dir_.path() + " && ";
  std::string out;
  ASSERT_EQ(RunCommand(cd + "tprofctl diff A.data B.data --format json", &out), 0) << out;
  std::string error;
  auto j = ParseJson(out, &error);
  ASSERT_TRUE(j) << error << "\n" << out.substr(0, 2000);
  EXPECT_EQ(N((*j).at("format_version")), 1u);
  EXPECT_EQ((*j).at("a").at("path").get<std::string>(), "A.data");
  EXPECT_GT(N((*j).at("b").at("samples_taken")), 0u);
  std::vector<const Json*> rows;  // the workload's, largest change first
  for (const Json& r : (*j).at("rows"))
    if (r.at("process").get<std::string>() == "tprof-wl-shares") rows.push_back(&r);
  ASSERT_GE(rows.size(), 3u) << out.substr(0, 2000);
  std::set<std::string> top2 = {(*rows[0]).at("function").get<std::string>(),
                                (*rows[1]).at("function").get<std::string>()};
  EXPECT_EQ(top2, (std::set<std::string>{"wl_alpha", "wl_gamma"})) << out.substr(0, 2000);
  for (const Json* r : rows) {
    const std::string& f = (*r).at("function").get<std::string>();
    const double a = (*r).at("percent_a").get<double>(), b = (*r).at("percent_b").get<double>();
    EXPECT_NEAR((*r).at("delta_points").get<double>(), b - a, 0.0002) << f;
    if (f == "wl_alpha" || f == "wl_gamma")
      std::printf("  [diff] %s: %.1f%% -> %.1f%% (%+.1f points)\n", f.c_str(), a, b, b - a);
    if (f == "wl_alpha") {
      EXPECT_GT(a, 4 * b) << "wl_alpha: " << a << "% -> " << b << "%";
    } else if (f == "wl_gamma") {
      EXPECT_GT(b, 4 * a) << "wl_gamma: " << a << "% -> " << b << "%";
    }
  }
  // The same comparison in Google's pprof (-diff_base: B's samples minus
  // A's, per function): the two profiles exported with --format pprof.
  std::map<std::string, int64_t> delta;
  for (const Json* r : rows)
    delta[(*r).at("function").get<std::string>()] += static_cast<int64_t>(N((*r).at("samples_b"))) -
                                                     static_cast<int64_t>(N((*r).at("samples_a")));
  for (const char* name : {"A", "B"}) {
    Result e = Sh(cd + "tprofctl dump -i " + name + ".data --format pprof -o " + name + ".pb.gz");
    ASSERT_EQ(e.rc, 0) << e.out;
  }
  Result pp = Sh(cd + "pprof -sample_index=samples -top -nodecount=100000 -nodefraction=0 "
                      "-diff_base=A.pb.gz B.pb.gz");
  ASSERT_EQ(pp.rc, 0) << pp.out;
  std::map<std::string, int64_t> pprof_flat;
  static const std::regex diff_row(R"(^\s*(-?\d+)\s+\S+%\s+\S+%\s+-?\d+\s+\S+%\s+(.+?)\s*$)");
  std::istringstream pp_lines(pp.out);
  std::smatch m;
  for (std::string line; std::getline(pp_lines, line);)
    if (std::regex_match(line, m, diff_row)) pprof_flat[m[2]] += std::stoll(m[1]);
  for (const char* fn : {"wl_alpha", "wl_gamma"}) {
    EXPECT_NE(delta[fn], 0) << fn;
    EXPECT_EQ(pprof_flat[fn], delta[fn]) << fn << "\n" << pp.out;
  }
  EXPECT_LT(pprof_flat.at("wl_alpha"), 0) << pp.out;
  EXPECT_GT(pprof_flat.at("wl_gamma"), 0) << pp.out;

  Result text = Sh(cd + "tprofctl diff A.data B.data --top 3");
  EXPECT_EQ(text.rc, 0) << text.out;
  EXPECT_TRUE(Contains(text.out, "A: A.data: ")) << text.out;
  EXPECT_TRUE(Contains(text.out, "more rows: raise --top")) << text.out;

  Result one = Sh(cd + "tprofctl diff A.data");
  EXPECT_EQ(one.rc, 2) << one.out;
  Result missing = Sh(cd + "tprofctl diff A.data nonexistent.data");
  EXPECT_EQ(missing.rc, 1) << missing.out;
  EXPECT_TRUE(Contains(missing.out, "nonexistent.data")) << missing.out;
}

// (h) The recorder killed with SIGKILL: the session ends with it.
TEST_F(Profiler, KilledRecorderFreesTheSession) {
  const std::string cd = "cd " + dir_.path() + " && ";
  Result start = Sh(cd + "tprofctl start -o killed.data");
  ASSERT_EQ(start.rc, 0) << start.out;
  pid_t recorder = RecorderPid();
  ASSERT_GT(recorder, 0);
  EXPECT_EQ(DeviceState(), static_cast<uint32_t>(TPROF_STATE_SAMPLING));
  ASSERT_EQ(::kill(recorder, SIGKILL), 0);
  int ms = WaitForIdle(kSessionEndMs);
  EXPECT_GE(ms, 0) << "the module is still sampling " << kSessionEndMs / 1000
                   << " s after its recorder died";
  RecordProperty("idle_after_kill_ms", ms);
  EXPECT_TRUE(WaitFor([&] { return ProcessGone(recorder); })) << "the killed recorder stayed";

  auto t0 = Clock::now();
  Result stop = Sh("tprofctl stop");
  EXPECT_NE(stop.rc, 0) << stop.out;
  EXPECT_TRUE(Contains(stop.out, "no recorder is running")) << stop.out;
  EXPECT_TRUE(Contains(stop.out, "killed")) << "should say the last one died:\n" << stop.out;
  // A live recorder is given 60 s to write its profile: a stop that waited
  // for the dead one would take all of them, however fast the host.
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(60)) << "stop waited for a dead recorder";
  EXPECT_FALSE(std::filesystem::exists(dir_.File("killed.data")));

  // A stale pid file whose pid now belongs to another program: neither
  // stop nor start may take that program for the recorder (or signal it).
  pid_t other = ::fork();
  ASSERT_GE(other, 0);
  if (other == 0) {
    ::execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::ofstream(RecorderPidFile()) << other << "\n";
  Result reused = Sh("tprofctl stop");
  EXPECT_EQ(reused.rc, 1) << reused.out;
  int status = 0;
  EXPECT_EQ(::waitpid(other, &status, WNOHANG), 0) << "tprofctl stop signalled pid " << other;
  ::kill(other, SIGKILL);
  ::waitpid(other, &status, 0);
  std::ofstream(RecorderPidFile()) << ::getpid() << "\n";  // alive, but not tprofctl

  Result again = Sh(cd + "tprofctl start -o after.data");
  ASSERT_EQ(again.rc, 0) << again.out;
  EXPECT_EQ(Sh("tprof-wl-shares --ms 100").rc, 0);
  Result stop2 = Sh("tprofctl stop");
  ASSERT_EQ(stop2.rc, 0) << stop2.out;
  auto j = DumpJson(dir_.File("after.data"));
  ASSERT_TRUE(j);
  EXPECT_GT(N((*j).at("samples")), 0u);
}

// (i) The module cannot be unloaded under a running recorder, which then
// still stops and writes its profile.
TEST_F(Profiler, ModuleUnloadIsRefusedWhileRecording) {
  Result start = Sh("cd " + dir_.path() + " && tprofctl start -o unload.data");
  ASSERT_EQ(start.rc, 0) << start.out;
  int err = UnloadModule();
  if (err == 0) {
    ADD_FAILURE() << "tprof unloaded under a running recorder";
    ASSERT_EQ(LoadModule(ModulePath()), 0);
    Sh("tprofctl stop");
    return;
  }
  EXPECT_TRUE(err == EWOULDBLOCK || err == EBUSY) << "delete_module: " << strerror(err);
  EXPECT_EQ(DeviceState(), static_cast<uint32_t>(TPROF_STATE_SAMPLING));
  EXPECT_EQ(Sh("tprof-wl-shares --ms 100").rc, 0);
  Result stop = Sh("tprofctl stop");
  ASSERT_EQ(stop.rc, 0) << stop.out;
  auto j = DumpJson(dir_.File("unload.data"));
  ASSERT_TRUE(j);
  EXPECT_GT(N((*j).at("samples")), 0u);
  EXPECT_GE(WaitForIdle(kSessionEndMs), 0);
}

// (j) Unprivileged: not the whole machine, but its own command, with
// kernel samples counted and their addresses withheld.
TEST_F(Profiler, UnprivilegedUserProfilesOnlyItsOwnCommand) {
  ScopedParanoid paranoid(1);  // kernel samples allowed, their addresses withheld
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0777), 0);
  // -a asks for the whole machine: refused, with what to do instead.
  Result all = RunAsNobody(dir_.path(), "tprofctl record -a -o all.data -- true");
  EXPECT_EQ(all.rc, 1) << all.out;
  EXPECT_TRUE(Contains(all.out, "CAP_PERFMON")) << all.out;
  EXPECT_TRUE(Contains(all.out, "record -- CMD")) << "the hint names the unprivileged way:\n" << all.out;
  EXPECT_FALSE(std::filesystem::exists(dir_.File("all.data")));

  // Without -a or -p, record samples the command (as `--pid 0` did).
  Result own = RunAsNobody(dir_.path(), "tprofctl record -o own.data -- tprof-wl-split --ms 400");
  ASSERT_EQ(own.rc, 0) << own.out;
  auto j = DumpJson(dir_.File("own.data"));
  ASSERT_TRUE(j);
  const Json* p = ProcessRow(*j, "tprof-wl-split");
  ASSERT_TRUE(p) << own.out;
  EXPECT_EQ((*j).at("attributes").at("pid").get<std::string>(), std::to_string(N((*p).at("pid"))))
      << "record -- CMD samples the recorded command";
  EXPECT_EQ((*j).at("processes").size(), 1u) << "only the command is sampled";
  EXPECT_GT(Percent(N((*p).at("kernel")), N((*p).at("samples"))), 10)
      << "kernel time is counted even though its addresses are hidden";
  auto tables = FunctionTables(*j, "tprof-wl-split");
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_TRUE(FunctionRow(*tables[0], "wl_main_spin")) << "user code is still resolved";
  for (const Json& f : (*tables[0]).at("functions")) {
    if (f.at("kind").get<std::string>() != "kernel" && f.at("kind").get<std::string>() != "module")
      continue;
    EXPECT_FALSE(f.at("resolved").get<bool>()) << f.at("function").get<std::string>();
    EXPECT_EQ(f.at("function").get<std::string>(), "[unknown] [kernel]");
  }
  // No kernel address anywhere: not in the samples, not in any output.
  auto profile = ReadProfile(dir_.File("own.data"));
  ASSERT_TRUE(profile) << profile.error().message();
  uint64_t kernel = 0;
  for (const auto& [key, count] : profile->samples) {
    if (key.user()) continue;
    kernel += count;
    EXPECT_EQ(key.ip, 0u);
    EXPECT_TRUE(key.flags & TPROF_SAMPLE_HIDDEN);
  }
  EXPECT_GT(kernel, 0u);
  for (const auto& [key, count] : profile->caller_edges)
    if (!key.sample.user()) {
      EXPECT_EQ(key.caller, 0u);
    }
  static const std::regex kernel_address("(0x)?ffff[0-9a-f]{12}");
  Result folded = RunAsNobody(dir_.path(), "tprofctl dump -i own.data --format folded");
  EXPECT_EQ(folded.rc, 0) << folded.out;
  EXPECT_TRUE(Contains(folded.out, "[unknown] [kernel]_[k]")) << folded.out;
  for (const std::string* text : {&own.out, &folded.out})
    EXPECT_FALSE(std::regex_search(*text, kernel_address)) << *text;
}

// At perf_event_paranoid 3 (Debian's default) an unprivileged record of
// its own command is refused for the level, not as another user's process,
// and the hint says how to lower it.
TEST_F(Profiler, ParanoidThreeNamesTheLevelNotAnotherUser) {
  ScopedParanoid paranoid(3);
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0777), 0);
  Result r = RunAsNobody(dir_.path(), "tprofctl record -o own.data -- true");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "kernel.perf_event_paranoid is 3")) << r.out;
  EXPECT_FALSE(Contains(r.out, "belongs to another user")) << r.out;
  EXPECT_TRUE(Contains(r.out, "sysctl kernel.perf_event_paranoid=2")) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir_.File("own.data")));
}

// The processes of a profile that are not the recorded tree's.
void CheckOnlyTheTree(const Json& j, const std::string& who) {
  SCOPED_TRACE(who);
  uint64_t child_work = 0, child_samples = 0;
  size_t children = 0;
  std::string names;
  for (const Json& p : j.at("processes")) {
    names += " " + p.at("name").get<std::string>();
    EXPECT_NE(p.at("name").get<std::string>(), "tprof-wl-shares") << "an unrelated process was sampled";
  }
  for (const Json* pf : FunctionTables(j, "tprof-wl-child")) {
    ++children;
    child_work += FunctionSamples(*pf, "wl_child_work");
    child_samples += N(pf->at("samples"));
  }
  EXPECT_TRUE(ProcessRow(j, "tprof-wl-spawn")) << "the command itself:" << names;
  // A lost record can be a child's exec COMM or its samples (a recorder
  // starved on a loaded host): then at least one child is asked for.
  const uint64_t lost = N(j.at("lost_samples")) + N(j.at("lost_records"));
  EXPECT_GE(children, lost ? 1u : 3u) << "the command's children:" << names << " (" << N(j.at("lost_samples"))
                                      << " samples and " << N(j.at("lost_records")) << " records lost)";
  if (lost) std::printf("  [%s] %zu children with samples, %llu lost\n", who.c_str(), children,
                        static_cast<unsigned long long>(lost));
  // Each child burns 100 ms of its CPU time in wl_child_work after loading
  // (which under TCG takes as long): its samples are there and in the loader.
  EXPECT_GT(child_work, 0u) << "no samples in the children's wl_child_work, of " << child_samples;
  EXPECT_EQ(N(j["idle"]["samples"]), 0u) << "idle CPUs are not the command's";
}

// utime + stime of a process, in USER_HZ ticks.
uint64_t CpuTicks(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  if (line.rfind(')') == std::string::npos) return 0;
  std::istringstream fields(line.substr(line.rfind(')') + 2));
  std::string f;
  uint64_t ticks = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i)
    if (i >= 14) ticks += std::stoull(f);
  return ticks;
}

// The acceptance test of perf-like record: `tprofctl record -- CMD` samples
// CMD and the children it forks, and nothing of a process that spins
// meanwhile outside that tree: run by an unprivileged user (which works
// since it asks for no more than its own processes), and by root (where
// only the default, not a permission, keeps the other process out).
TEST_F(Profiler, RecordFollowsTheCommandAndItsChildrenOnly) {
  ScopedParanoid paranoid(2);  // users may profile their own processes, user mode
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0777), 0);
  // The unrelated process, spinning in wl_alpha/wl_beta/wl_gamma for
  // longer than both recordings last (killed after them: in the debug
  // kernel under a busy host they took 58 s, and 20 s of spin ran out).
  pid_t other = ::fork();
  ASSERT_GE(other, 0);
  if (other == 0) {
    int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    ::dup2(null, 1);
    ::execlp("tprof-wl-shares", "tprof-wl-shares", "--ms", "600000", static_cast<char*>(nullptr));
    _exit(127);
  }
  const std::string workload = "tprof-wl-spawn --children 4 --ms-each 100";
  const uint64_t ticks0 = CpuTicks(other);
  Result nobody = RunAsNobody(dir_.path(), "tprofctl record -g -o tree.data --by process -- " + workload);
  const uint64_t ticks1 = CpuTicks(other);
  Result root = Record("root-tree.data", "-g --by process", workload);
  const uint64_t ticks2 = CpuTicks(other);
  ::kill(other, SIGKILL);
  ::waitpid(other, nullptr, 0);
  // It really ran meanwhile, so no samples of it mean it was not followed.
  EXPECT_GT(ticks1 - ticks0, 10u) << "the unrelated process should spin during the recording";
  EXPECT_GT(ticks2 - ticks1, 10u) << "the unrelated process should spin during the recording";
  ASSERT_EQ(nobody.rc, 0) << nobody.out;
  ASSERT_EQ(root.rc, 0) << root.out;
  auto j = DumpJson(dir_.File("tree.data"));
  ASSERT_TRUE(j);
  CheckOnlyTheTree(*j, "as nobody");
  j = DumpJson(dir_.File("root-tree.data"));
  ASSERT_TRUE(j);
  CheckOnlyTheTree(*j, "as root");
}

// `record -p PID` without a command records that running process until it
// exits (as perf record -p), then reports it and nothing else. The process
// waits stopped until the session runs (`tprofctl status`): in the KASAN
// kernel tprofctl took longer to load and attach than the process's 3 s of
// CPU ("no such process"), so no fixed run time is safe.
// A failed recording never destroys the last good one (as perf): a
// command that cannot run ends the recording with nothing written (not a
// profile of tprofctl's own fork over the previous file), and an output
// that cannot be written is refused before the command runs.
TEST_F(Profiler, FailedRecordingsLeaveThePreviousProfileAlone) {
  const std::string cd = "cd " + dir_.path() + " && ";
  Result good = Sh(cd + "tprofctl record -o p.data -- tprof-wl-shares --ms 100 >/dev/null");
  ASSERT_EQ(good.rc, 0) << good.out;
  const std::string before = ReadFileOrEmpty(dir_.File("p.data"));
  ASSERT_FALSE(before.empty());

  Result missing = Sh(cd + "tprofctl record -o p.data -- /nonexistent-cmd");
  EXPECT_EQ(missing.rc, 127) << missing.out;
  EXPECT_TRUE(Contains(missing.out, "cannot run /nonexistent-cmd: No such file or directory"))
      << missing.out;
  EXPECT_FALSE(Contains(missing.out, "profile written")) << missing.out;
  EXPECT_EQ(ReadFileOrEmpty(dir_.File("p.data")), before) << "the previous profile was overwritten";

  Result unwritable = Sh(cd + "tprofctl record -o /nonexistent/dir/x.data -- touch ran");
  EXPECT_NE(unwritable.rc, 0) << unwritable.out;
  EXPECT_TRUE(Contains(unwritable.out, "cannot write /nonexistent/dir/x.data")) << unwritable.out;
  EXPECT_NE(::access(dir_.File("ran").c_str(), F_OK), 0)
      << "the command ran although its profile could not be written";
  // Report options an export cannot honour are refused before CMD runs.
  Result shape = Sh(cd + "tprofctl record -o p.data --format pprof --top 3 -- touch ran");
  EXPECT_EQ(shape.rc, 2) << shape.out;
  EXPECT_TRUE(Contains(shape.out, "--top, --by, --percent-limit and --sort shape the text and json tables")) << shape.out;
  EXPECT_NE(::access(dir_.File("ran").c_str(), F_OK), 0) << "the command ran before the refusal";
  EXPECT_EQ(ReadFileOrEmpty(dir_.File("p.data")), before) << "the previous profile was overwritten";
  Result start = Sh(cd + "tprofctl start -o /nonexistent/dir/x.data");
  EXPECT_NE(start.rc, 0) << start.out;
  EXPECT_TRUE(Contains(start.out, "cannot write /nonexistent/dir/x.data")) << start.out;
  EXPECT_EQ(DeviceState(), static_cast<uint32_t>(TPROF_STATE_IDLE)) << "a refused start left a session";
}

// record -q (perf record's --quiet), for scripts: the profile is written,
// nothing is printed, and the exit status is still the command's.
TEST_F(Profiler, QuietRecordWritesTheProfileAndPrintsNothing) {
  const std::string file = dir_.File("q.data");
  Result r = Sh("tprofctl record -q -o " + file +
                " -- sh -c 'tprof-wl-shares --ms 100 >/dev/null; exit 3'");
  EXPECT_EQ(r.rc, 3) << r.out;
  EXPECT_EQ(r.out, "") << "printed with --quiet";
  auto j = DumpJson(file);
  ASSERT_TRUE(j);
  EXPECT_GT(N(j->at("samples")), 0u);
  Result failed = Sh("tprofctl record -q -o /nonexistent/dir/q.data -- true");
  EXPECT_NE(failed.rc, 0);
  EXPECT_TRUE(Contains(failed.out, "cannot write /nonexistent/dir/q.data")) << "errors still print";
}

// record -t and -C (perf's): the file keeps the samples of the threads,
// or of the CPUs, asked for and its "filter" attribute says so. The other
// thread's function has no sample at all; a thread that is not there, a
// CPU the machine lacks and -t with a command are refused.
TEST_F(Profiler, RecordKeepsOnlyTheThreadsOrCpusAsked) {
  const std::string file = dir_.File("t.data");
  // The second thread's tid from /proc/PID/task once it runs; the process
  // waits stopped until the session runs (tprofctl starts slower under
  // TCG than the threads' second of CPU lasts).
  Result r = Sh("tprof-wl-threads --ms 1000 >/dev/null & p=$!; two=; i=0; "
                "while [ -z \"$two\" ] && [ $i -lt 500 ]; do "
                "two=$(ls /proc/$p/task | grep -vx $p); i=$((i+1)); sleep 0.01; done; "
                "kill -STOP $p; tprofctl record -q -t $two -o " + file + " & r=$!; i=0; "
                "until tprofctl status | grep -q '^sampling: running'; do "
                "i=$((i+1)); [ $i -lt 120 ] || break; sleep 0.5; done; "
                "kill -CONT $p; wait $r; rc=$?; wait $p; exit $rc");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = DumpJson(file);
  ASSERT_TRUE(j);
  EXPECT_NE(j->at("attributes").value("filter", std::string()).find("tid"), std::string::npos)
      << j->at("attributes").dump();
  const auto tables = FunctionTables(*j, "tprof-wl-thread");  // the comm: 15 characters
  ASSERT_EQ(tables.size(), 1u) << "one process, the threads'";
  EXPECT_GT(FunctionSamples(*tables[0], "wl_thread_two"), 0u);
  EXPECT_EQ(FunctionSamples(*tables[0], "wl_thread_one"), 0u) << "the other thread's samples";

  const std::string cfile = dir_.File("c.data");
  // The command runs on CPU 0 only (taskset), so its samples are there.
  r = Sh("tprofctl record -q -C 0 -o " + cfile + " -- taskset 1 tprof-wl-shares --ms 300 >/dev/null");
  ASSERT_EQ(r.rc, 0) << r.out;
  j = DumpJson(cfile);
  ASSERT_TRUE(j);
  uint64_t on_zero = 0;
  for (const Json& c : j->at("cpus")) {
    if (N(c.at("cpu")) == 0) on_zero += N(c.at("samples"));
    else EXPECT_EQ(N(c.at("samples")), 0u) << "cpu " << N(c.at("cpu"));
  }
  EXPECT_GT(on_zero, 0u) << j->at("cpus").dump();
  // The workload's own functions, which run only once taskset pinned it
  // (the held child and taskset itself may run anywhere before).
  auto workload_samples = [](const Json& doc) {
    uint64_t n = 0;
    for (const Json* pf : FunctionTables(doc, "tprof-wl-shares"))
      for (const char* f : {"wl_alpha", "wl_beta", "wl_gamma"}) n += FunctionSamples(*pf, f);
    return n;
  };
  EXPECT_GT(workload_samples(*j), 0u) << "-C with CMD keeps CMD's samples on that CPU";
  if (::sysconf(_SC_NPROCESSORS_ONLN) > 1) {  // and none of them on CPU 1
    r = Sh("tprofctl record -q -C 1 -o " + cfile + " -- taskset 1 tprof-wl-shares --ms 300 >/dev/null");
    ASSERT_EQ(r.rc, 0) << r.out;
    j = DumpJson(cfile);
    ASSERT_TRUE(j);
    EXPECT_EQ(workload_samples(*j), 0u) << "the pinned workload's functions on CPU 1";
  }

  for (const char* bad : {"-t 1 -- true", "-C 4096 -- true", "-t 1,2 -- true",
                          "-t 1 --time-granularity 0"}) {
    Result u = Sh(std::string("tprofctl record -q -o ") + dir_.File("bad.data") + " " + bad);
    EXPECT_EQ(u.rc, 2) << bad << ": " << u.out;
  }
  Result gone = Sh("tprofctl record -q -o " + dir_.File("bad.data") + " -t 4000000");
  EXPECT_EQ(gone.rc, 1) << gone.out;
  EXPECT_TRUE(Contains(gone.out, "no thread 4000000")) << gone.out;
}

// A program that a shell execs is its process's main executable, never a
// shared library, in the report and as pprof's first mapping: the spaces
// before the exec (the forked recorder's, the shell's) keep their own
// mappings. Space ids were the mm's address alone, which the kernel
// reuses once the mm is freed; they now hash the image too
// (kmod/sampling_hot.c). A user saw "shared:sha256sum" in 3 of 6 runs of
// `sh -c`; in the guests the old module passed this too (no reused mm
// met a sampled one), so it guards what a user sees, not that cause.
// 20 programs exec'd by 20 shells in one recording (each mm freed and
// its slot reused by the next), every one USER; pprof's main mapping of
// three of them (each export and pprof run takes seconds under TCG).
TEST_F(Profiler, ProgramExecdByAShellIsTheMainExecutable) {
  constexpr int kRuns = 20;
  const std::string file = dir_.File("sh.data");
  Result rec = Sh("tprofctl record -q -o " + file + " -- sh -c 'i=0; while [ $i -lt " +
                  std::to_string(kRuns) +
                  " ]; do sh -c \"exec tprof-wl-shares --ms 60\" >/dev/null; i=$((i+1)); done'");
  ASSERT_EQ(rec.rc, 0) << rec.out;
  auto j = DumpJson(file);
  ASSERT_TRUE(j);
  const auto tables = FunctionTables(*j, "tprof-wl-shares");
  ASSERT_EQ(tables.size(), size_t(kRuns)) << "one table per exec'd program";
  std::set<uint64_t> pids;
  for (const Json* table : tables) {
    const uint64_t pid = N(table->at("pid"));
    SCOPED_TRACE("pid " + std::to_string(pid));
    pids.insert(pid);
    uint64_t in_program = 0;
    for (const Json& f : table->at("functions")) {
      const std::string object = f.at("object").get<std::string>();
      if (!EndsWith(object, "/tprof-wl-shares")) continue;
      EXPECT_EQ(f.at("kind").get<std::string>(), "main") << f.at("function").get<std::string>();
      in_program += N(f.at("samples"));
    }
    EXPECT_GT(in_program, 0u);
    for (const Json& p : j->at("processes")) {
      if (N(p.at("pid")) == pid) {
        EXPECT_GE(N(p.at("user")), in_program) << "the program's code is USER, not SHARED";
      }
    }
  }
  int exported = 0;
  for (uint64_t pid : pids) {
    if (exported++ == 3) break;
    const std::string pb = dir_.File("sh.pb.gz");
    Result dump = Sh("tprofctl dump -i " + file + " --format pprof --pid " + std::to_string(pid) +
                     " -o " + pb);
    ASSERT_EQ(dump.rc, 0) << dump.out;
    Result top = Sh("pprof -top -nodecount=3 " + pb);
    ASSERT_EQ(top.rc, 0) << top.out;
    EXPECT_TRUE(Contains(top.out, "File: tprof-wl-shares")) << "pprof's mapping[0]:\n" << top.out;
  }
}

TEST_F(Profiler, RecordOfARunningProcessEndsWhenItExits) {
  Result r = Sh("cd " + dir_.path() +
                " || exit 1; tprof-wl-shares --ms 1000 >/dev/null & w=$!; kill -STOP $w; "
                "tprofctl record -p $w -o p.data --by process > rec.out 2>&1 & r=$!; "
                "i=0; until tprofctl status | grep -q '^sampling: running'; do "
                "i=$((i+1)); [ $i -lt 120 ] || break; sleep 0.5; done; "
                "kill -CONT $w; wait $r; rc=$?; cat rec.out; exit $rc");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto w = ParseWritten(r.out);
  ASSERT_TRUE(w) << r.out;
  auto j = DumpJson(dir_.File("p.data"));
  ASSERT_TRUE(j);
  const Json* p = ProcessRow(*j, "tprof-wl-shares");
  ASSERT_TRUE(p) << r.out;
  EXPECT_GT(N(p->at("samples")), 0u);
  EXPECT_EQ(j->at("processes").size(), 1u) << "only the process given with -p:\n" << r.out;
  EXPECT_EQ(j->at("attributes").at("pid").get<std::string>(), std::to_string(N(p->at("pid"))));
}

// `record -p PID` whose target exits just as Ctrl-C arrives: the exit
// watcher's SIGTERM and the user's SIGINT both reach a recorder that is
// already stopping, and neither may kill it before its summary (it died
// with "Terminated", rc 143, when the stop signals were unblocked before
// the summary; it did so in every round). A race: 20 rounds, target
// killed and SIGINT sent back to back once the session runs. ~3 s a
// round under TCG: x86 6.1 only.
TEST_F(Profiler, RecordOfAProcessThatExitsAsCtrlCArrivesStillReports) {
  constexpr int kRounds = 20;
  Result r = Sh("cd " + dir_.path() + " || exit 1; n=0; i=0; while [ $i -lt " +
                std::to_string(kRounds) + " ]; do i=$((i+1)); "
                "tprof-wl-shares --ms 3600000 >/dev/null & w=$!; "
                "tprofctl record -p $w -o p.data --by process --top 1 > rec.out 2>&1 & r=$!; "
                "j=0; until tprofctl status | grep -q '^sampling: running'; do "
                "j=$((j+1)); [ $j -lt 200 ] || break; sleep 0.05; done; "
                "kill $w; kill -INT $r; wait $r; rc=$?; wait $w 2>/dev/null; "
                "if [ $rc -eq 0 ] && grep -q 'profile written to' rec.out; then n=$((n+1)); "
                "else echo \"round $i: rc $rc\"; cat rec.out; fi; done; echo \"reported $n\"");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "reported " + std::to_string(kRounds) + "\n")) << r.out;
}

}  // namespace
}  // namespace tprof::test
