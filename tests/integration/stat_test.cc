// tprofctl stat as a perf user runs it in the guest: a command's counts
// (counts-only PMU counters, ABI 1.14) checked against what the kernel's
// own accounting (wait4's rusage) and the workload's known page faults
// say, the command's exit status passed on, unsupported events shown as
// such, the unprivileged rules; and, under QEMU's -icount, cycles exactly
// 2^S x instructions.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "../common/json.h"
#include "../common/temp_dir.h"
#include "guest_env.h"

namespace tprof::test {
namespace {

// `tprofctl stat -j -o FILE ARGS`'s result: the exit status and the JSON.
struct StatRun {
  Result result;
  std::optional<Json> json;
};

// A file `stat -j -o` wrote, parsed (a failure says why).
std::optional<Json> ReadJson(const std::string& file, const std::string& context) {
  std::ifstream in(file);
  std::ostringstream s;
  s << in.rdbuf();
  std::string error;
  auto json = ParseJson(s.str(), &error);
  EXPECT_TRUE(json) << error << "\n" << s.str() << "\n" << context;
  return json;
}

StatRun Stat(const TempDir& dir, const std::string& args) {
  StatRun run;
  const std::string file = dir.path() + "/stat.json";
  ::unlink(file.c_str());
  run.result = Sh("tprofctl stat -j -o " + file + " " + args);
  run.json = ReadJson(file, run.result.out);
  return run;
}

std::optional<uint64_t> Value(const Json& j, const std::string& event) {
  for (const Json& e : j.at("events"))
    if (e.at("event").get<std::string>() == event && !e.at("value").is_null())
      return e.at("value").get<uint64_t>();
  return std::nullopt;
}

uint64_t Usage(const Json& j, const char* key) { return j.at("rusage").at(key).get<uint64_t>(); }

// tprof-wl-faults touches 1500 + 300 fresh pages: one fault each.
TEST(StatTest, CountsAtLeastTheKnownFaultsAndNoMoreThanTheKernelAccounted) {
  TempDir dir;
  StatRun run = Stat(dir, "-e page-faults,minor-faults,major-faults,context-switches,task-clock "
                          "-- tprof-wl-faults 1500 300");
  ASSERT_EQ(run.result.rc, 0) << run.result.out;
  ASSERT_TRUE(run.json);
  const Json& j = *run.json;
  const auto faults = Value(j, "page-faults"), minor = Value(j, "minor-faults"),
             major = Value(j, "major-faults"), cs = Value(j, "context-switches"),
             clock = Value(j, "task-clock");
  ASSERT_TRUE(faults && minor && major && cs && clock) << j.dump();
  EXPECT_GE(*faults, 1800u) << "the workload's own fresh pages";
  // wait4 counts from the fork, the counters from just before the exec.
  EXPECT_LE(*faults, Usage(j, "minor_faults") + Usage(j, "major_faults")) << j.dump();
  // perf counts a fault at its entry, minor/major once handled: a retried
  // or spurious one (arm64 debug: 1888 vs 1883) is a fault of neither.
  EXPECT_GE(*faults, *minor + *major);
  EXPECT_GE(*minor + *major, 1800u) << "the fresh pages are faults that were handled";
  EXPECT_LE(*cs, Usage(j, "voluntary_switches") + Usage(j, "involuntary_switches")) << j.dump();
  // CPU time: never more than the kernel's own total for the command
  // (rounded to µs in rusage), and some.
  const double cpu_s = j.at("user_s").get<double>() + j.at("system_s").get<double>();
  EXPECT_GT(*clock, 0u);
  EXPECT_LE(double(*clock) / 1e9, cpu_s * 1.02 + 0.002) << j.dump();
  EXPECT_EQ(j.at("exit_status").get<int>(), 0);
  EXPECT_EQ(j.at("command")[0].get<std::string>(), "tprof-wl-faults");
}

// The counts cover the processes the command creates (perf stat's inherit).
TEST(StatTest, CountsTheProcessesTheCommandCreates) {
  TempDir dir;
  // (COLD 1: the workload maps at least one page of each kind)
  StatRun one = Stat(dir, "-e page-faults -- tprof-wl-faults 1500 1");
  StatRun two = Stat(dir, "-e page-faults -- sh -c 'tprof-wl-faults 1500 1 && tprof-wl-faults 1500 1'");
  ASSERT_EQ(one.result.rc, 0) << one.result.out;
  ASSERT_EQ(two.result.rc, 0) << two.result.out;
  ASSERT_TRUE(one.json && two.json);
  const auto a = Value(*one.json, "page-faults"), b = Value(*two.json, "page-faults");
  ASSERT_TRUE(a && b);
  EXPECT_GE(*b, 3000u) << "both children's faults";
  EXPECT_GT(*b, *a + 1400) << *a << " for one, " << *b << " for two under a shell";
}

TEST(StatTest, TextIsPerfStatsTableOnStderrAndTheExitStatusIsTheCommands) {
  Result r = Sh("tprofctl stat -e page-faults,cs -- sh -c 'exit 3' 2>&1 >/dev/null");
  EXPECT_EQ(r.rc, 3) << r.out;
  EXPECT_TRUE(Contains(r.out, "Performance counter stats for 'sh -c exit 3':")) << r.out;
  EXPECT_TRUE(Contains(r.out, "page-faults")) << r.out;
  EXPECT_TRUE(Contains(r.out, "seconds time elapsed")) << r.out;
  // Default events: the hardware ones show whether this machine counts them.
  Result d = Sh("tprofctl stat -- true");
  EXPECT_EQ(d.rc, 0) << d.out;
  EXPECT_TRUE(Contains(d.out, "msec task-clock")) << d.out;
  EXPECT_EQ(Contains(d.out, "<not supported>      cycles"), !HasHardwarePmu()) << d.out;
  Result missing = Sh("tprofctl stat -- /nonexistent-cmd");
  EXPECT_EQ(missing.rc, 127) << missing.out;
  EXPECT_TRUE(Contains(missing.out, "cannot run /nonexistent-cmd")) << missing.out;
  for (const char* bad : {"-e nosuch -- true", "-e cycles:1000 -- true", "-e bp:0x1000 -- true",
                          "-e page-faults"}) {
    Result u = Sh(std::string("tprofctl stat ") + bad);
    EXPECT_EQ(u.rc, 2) << bad << ": " << u.out;
  }
}

TEST(StatTest, AnUnwritableOutputFailsBeforeTheCommandRuns) {
  TempDir dir;
  const std::string marker = dir.path() + "/ran";
  Result r = Sh("tprofctl stat -o /nonexistent/dir/x.json -- touch " + marker);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "/nonexistent/dir/x.json")) << r.out;
  EXPECT_NE(::access(marker.c_str(), F_OK), 0) << "the command ran";
}

// Unprivileged: its own command at paranoid 2 (user mode only), refused
// at Debian's 3 with the level named.
TEST(StatTest, UnprivilegedCountsItsOwnCommandUpToParanoidTwo) {
  TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
  {
    ScopedFileValue paranoid("/proc/sys/kernel/perf_event_paranoid", "2");
    ASSERT_TRUE(paranoid.ok());
    Result r = RunAsNobody(dir.path(), "tprofctl stat -j -o own.json -e page-faults,task-clock -- "
                                       "tprof-wl-faults 500 1");
    ASSERT_EQ(r.rc, 0) << r.out;
    auto j = ReadJson(dir.path() + "/own.json", r.out);
    ASSERT_TRUE(j);
    auto faults = Value(*j, "page-faults");
    ASSERT_TRUE(faults) << j->dump();
    EXPECT_GE(*faults, 500u);
  }
  ScopedFileValue paranoid("/proc/sys/kernel/perf_event_paranoid", "3");
  ASSERT_TRUE(paranoid.ok());
  Result r = RunAsNobody(dir.path(), "tprofctl stat -e page-faults -- true");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "perf_event_paranoid")) << r.out;
}

// A command that execs a program its user may not observe (setuid root)
// is counted up to that exec only, as perf exits its events there, and
// stat says so; a plain exec is counted through.
TEST(StatTest, CountsStopAtASetuidExecAndStatSaysSo) {
  TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
  ScopedParanoid level(2);
  ScopedSetuidCopy copy("/usr/bin/tprof-wl-faults", "/tmp/tprof-wl-faults-suid-stat");
  ASSERT_TRUE(copy.ok());
  Result plain = RunAsNobody(dir.path(), "tprofctl stat -j -o plain.json -e page-faults -- "
                                         "tprof-wl-faults 1500 1");
  Result suid = RunAsNobody(dir.path(), std::string("tprofctl stat -j -o suid.json -e page-faults -- ") +
                                            copy.path() + " 1500 1");
  ASSERT_EQ(plain.rc, 0) << plain.out;
  ASSERT_EQ(suid.rc, 0) << suid.out;
  auto p = ReadJson(dir.path() + "/plain.json", plain.out);
  auto s = ReadJson(dir.path() + "/suid.json", suid.out);
  ASSERT_TRUE(p && s);
  EXPECT_EQ(p->at("exec_left").get<uint64_t>(), 0u) << p->dump();
  EXPECT_EQ(s->at("exec_left").get<uint64_t>(), 1u) << s->dump();
  const auto pf = Value(*p, "page-faults"), sf = Value(*s, "page-faults");
  ASSERT_TRUE(pf && sf);
  EXPECT_GE(*pf, 1500u) << "the plain program's own pages";
  EXPECT_LT(*sf, 1000u) << "the setuid program's pages were counted";
  Result text = RunAsNobody(dir.path(), std::string("tprofctl stat -e page-faults -- ") +
                                            copy.path() + " 10 1");
  EXPECT_EQ(text.rc, 0) << text.out;
  EXPECT_TRUE(Contains(text.out, "1 thread(s) exec'd a program you may not observe")) << text.out;
}

// In a user namespace of its own (root there, nobody outside) a user
// counts its own command as it does outside: the namespace's root is no
// CAP_PERFMON in the machine's.
TEST(StatTest, CountsItsOwnCommandFromAUserNamespace) {
  TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
  ScopedParanoid level(2);
  std::optional<ScopedFileValue> userns_clone;
  if (::access("/proc/sys/kernel/unprivileged_userns_clone", F_OK) == 0)
    userns_clone.emplace("/proc/sys/kernel/unprivileged_userns_clone", "1");
  ScopedFileValue max_userns("/proc/sys/user/max_user_namespaces", "1000");
  Result r = RunAsNobody(dir.path(), "unshare -r sh -c 'test $(id -u) = 0 && tprofctl stat -j -o "
                                     "ns.json -e page-faults,task-clock -- tprof-wl-faults 500 1'");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = ReadJson(dir.path() + "/ns.json", r.out);
  ASSERT_TRUE(j);
  const auto faults = Value(*j, "page-faults");
  ASSERT_TRUE(faults) << j->dump();
  EXPECT_GE(*faults, 500u);
  EXPECT_EQ(j->at("exec_left").get<uint64_t>(), 0u) << j->dump();
  // Above paranoid 2 the namespace's root is refused as nobody is.
  ScopedParanoid three(3);
  Result refused = RunAsNobody(dir.path(), "unshare -r tprofctl stat -e page-faults -- true");
  EXPECT_EQ(refused.rc, 1) << refused.out;
  EXPECT_TRUE(Contains(refused.out, "perf_event_paranoid")) << refused.out;
}

// -p: a running process is counted from the attach until it exits, as
// perf stat -p; Ctrl-C (SIGINT) ends the count early and still prints it.
// The target waits on a FIFO until stat holds its counters (a program
// descriptor open in stat's process), then execs the workload.
TEST(StatTest, CountsARunningProcessUntilItExitsOrCtrlC) {
  TempDir dir;
  const std::string d = dir.path();
  // Until stat's process has a PMU program open, or is gone (it failed:
  // its output says why), or 1200 tries; the script goes on either way so
  // that the held target is released.
  const std::string attached =
      "i=0; until ls -l /proc/$s/fd 2>/dev/null | grep -q tprof_pmu; do i=$((i+1)); "
      "kill -0 $s 2>/dev/null && [ $i -lt 1200 ] || { echo never attached; break; }; "
      "sleep 0.05; done; ";
  Result r = Sh("cd " + d + " && mkfifo go && "
                "{ sh -c 'read x < go; exec tprof-wl-faults 1500 1' & t=$!; "
                "tprofctl stat -p $t -j -o p.json -e page-faults,task-clock & s=$!; " +
                attached + "echo go > go; wait $s; echo stat rc $?; }");
  EXPECT_TRUE(Contains(r.out, "stat rc 0")) << r.out;
  EXPECT_FALSE(Contains(r.out, "never attached")) << r.out;
  auto j = ReadJson(d + "/p.json", r.out);
  ASSERT_TRUE(j);
  const auto faults = Value(*j, "page-faults");
  ASSERT_TRUE(faults) << j->dump();
  EXPECT_GE(*faults, 1500u) << "the workload exec'd in the counted process";
  EXPECT_LT(*faults, 3000u) << j->dump();
  EXPECT_TRUE(j->at("command").empty()) << j->dump();
  EXPECT_FALSE(j->contains("rusage")) << "a process stat did not run has no rusage of its own";
  // Ctrl-C: a sleeping process, counted until stat is interrupted.
  Result c = Sh("cd " + d + " && { sleep 600 & t=$!; tprofctl stat -p $t -e page-faults,cs "
                "2>text & s=$!; " + attached + "kill -INT $s; wait $s; echo stat rc $?; "
                "kill $t; cat text; }");
  EXPECT_TRUE(Contains(c.out, "stat rc 0")) << c.out;
  EXPECT_TRUE(Contains(c.out, "Performance counter stats for process id '")) << c.out;
  EXPECT_TRUE(Contains(c.out, "page-faults")) << c.out;
  EXPECT_FALSE(Contains(c.out, "seconds user")) << c.out;
  // Usage errors, and a process that is not there.
  EXPECT_EQ(Sh("tprofctl stat -e page-faults").rc, 2);
  EXPECT_EQ(Sh("tprofctl stat -p 0").rc, 2);
  Result gone = Sh("tprofctl stat -p 4194000 -e page-faults");
  EXPECT_EQ(gone.rc, 1) << gone.out;
  EXPECT_TRUE(Contains(gone.out, "process 4194000")) << gone.out;
}

// -a: every CPU, every task (perf stat -a), for root. A CPU taken offline
// keeps what it counted: 3000 fresh pages touched on CPU 1, CPU 1 taken
// offline, then 300 on CPU 0 make at least 3300 faults in the sum (CPU 0
// alone would have the 300 and the shells' few hundred). Unprivileged: EPERM
// with the hint.
TEST(StatTest, AllCpusCountsEveryTaskAndKeepsWhatAnOfflinedCpuCounted) {
  ASSERT_GE(::sysconf(_SC_NPROCESSORS_ONLN), 2) << "the guest needs 2 CPUs";
  TempDir dir;
  struct Restore {
    ~Restore() { SetCpuOnline(1, true); }
  } restore;
  StatRun run = Stat(dir, "-a -e page-faults,cpu-clock -- sh -c 'taskset 2 tprof-wl-faults 3000 1 "
                          "&& echo 0 > /sys/devices/system/cpu/cpu1/online && "
                          "taskset 1 tprof-wl-faults 300 1'");
  EXPECT_TRUE(SetCpuOnline(1, true));
  ASSERT_EQ(run.result.rc, 0) << run.result.out;
  ASSERT_TRUE(run.json);
  const Json& j = *run.json;
  const auto faults = Value(j, "page-faults"), clock = Value(j, "cpu-clock");
  ASSERT_TRUE(faults && clock) << j.dump();
  EXPECT_GE(*faults, 3300u) << "CPU 1's 3000 faults went with it: " << j.dump();
  EXPECT_TRUE(j.at("all_cpus").get<bool>()) << j.dump();
  EXPECT_FALSE(j.contains("rusage")) << j.dump();
  // cpu-clock counts each online CPU's time, idle or not: more than the
  // elapsed time on one CPU, at most on two.
  const double elapsed = j.at("elapsed_s").get<double>();
  EXPECT_GT(double(*clock) / 1e9, elapsed * 0.9) << j.dump();
  EXPECT_LT(double(*clock) / 1e9, elapsed * 2.1 + 0.05) << j.dump();
  // The table names what it counted. (Without a command it counts until
  // Ctrl-C, the wait that -p's test drives.)
  Result text = Sh("tprofctl stat -a -e page-faults -- true");
  EXPECT_EQ(text.rc, 0) << text.out;
  EXPECT_TRUE(Contains(text.out, "Performance counter stats for 'system wide':")) << text.out;
  EXPECT_EQ(Sh("tprofctl stat -a -p 1 -- true").rc, 2);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
  ScopedParanoid level(-1);
  Result nobody = RunAsNobody(dir.path(), "tprofctl stat -a -e page-faults -- true");
  EXPECT_EQ(nobody.rc, 1) << nobody.out;
  EXPECT_TRUE(Contains(nobody.out, "CAP_PERFMON")) << nobody.out;
}

// Under -icount every instruction is 2^S cycles: both counts-only
// counters see the same instructions of the command, kernel ones
// included; without a PMU (x86 TCG) both are not supported.
TEST(PmuHardwareTest, StatCountsCyclesAsInstructionsTimesTheIcountShift) {
  TempDir dir;
  StatRun run = Stat(dir, "-e instructions,cycles -- sh -c 'i=0; while [ $i -lt 2000 ]; do "
                          "i=$((i+1)); done'");
  ASSERT_EQ(run.result.rc, 0) << run.result.out;
  ASSERT_TRUE(run.json);
  const auto ins = Value(*run.json, "instructions"), cyc = Value(*run.json, "cycles");
  if (!HasHardwarePmu()) {
    EXPECT_FALSE(ins) << run.json->dump();
    EXPECT_FALSE(cyc) << run.json->dump();
    return;
  }
  ASSERT_TRUE(cyc) << run.json->dump();
  EXPECT_GT(*cyc, 0u);
  const int shift = IcountShift();
  if (shift < 0) return;  // a real CPU: cycles are not known in advance
  ASSERT_TRUE(ins) << run.json->dump();
  EXPECT_GT(*ins, 2000u * 10) << "a shell loop of 2000 rounds";
  const uint64_t want = *ins << shift;
  // Scheduled in and out together; a few instructions apart at most.
  EXPECT_LE(*cyc > want ? *cyc - want : want - *cyc, uint64_t(64) << shift)
      << "cycles " << *cyc << " vs 2^" << shift << " x instructions " << *ins;
}

}  // namespace
}  // namespace tprof::test
