// Helpers for integration tests, which run inside a tprof-vm guest against
// the real module (see tools/tprof-vm). They never skip: a guest without
// /dev/tprof is a failure.
#ifndef TPROF_TESTS_INTEGRATION_GUEST_ENV_H_
#define TPROF_TESTS_INTEGRATION_GUEST_ENV_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "tprof/device/device.h"

namespace tprof::test {

// Ends the current test as failed, with WHY as its message: throws an
// exception, which GoogleTest catches and reports as the test's failure.
// For helpers that return a value the test cannot go on without; an
// abort() there would end the whole suite's run instead of one test.
[[noreturn]] void FailTest(const std::string& why);

// Opens /dev/tprof or fails the current test with the library's message.
Device OpenDeviceOrFail();

// GET_INFO through the library, failing the test on error.
Info GetInfoOrFail(const Device& dev);

// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), in ns: tests
// that count samples burn CPU time, not wall time, so a descheduled guest
// does not shrink what they measure.
uint64_t ThreadCpuNs();

// One scheduler tick (HZ=250 on Debian's kernels): the tolerance of time checks.
constexpr uint64_t kTickNs = 4'000'000;

uint32_t Gettid();

// Whether the time metric of a thread (`ours`) agrees with the scheduler's
// CPU time of it (`sched`, SchedstatNs): within two ticks or 5%. The
// metric is the CPU's clock from switch-in to switch-out, interrupts
// included, as perf's task-clock counts; the scheduler leaves interrupts
// out (IRQ time accounting), and on a loaded host each one takes longer
// under TCG: 2.8% more over 300 ms in 6.1 beside another guest. A missed
// or doubled slice would be far more.
bool TimeMatchesSchedstat(uint64_t ours, uint64_t sched);

// What the scheduler says of one of this process's threads
// (/proc/self/task/<tid>): sum_exec_runtime in ns (schedstat's first field),
// its state letter ('R', 'S', ...), and its voluntary plus involuntary
// context switches (each is one sched_switch with it as prev).
uint64_t SchedstatNs(uint32_t tid);
// The same of any process (/proc/PID/schedstat), readable by every user.
uint64_t ProcessSchedstatNs(pid_t pid);
char ThreadState(uint32_t tid);
// The state letter of process PID (/proc/PID/stat), '?' once it is gone.
char ProcState(pid_t pid);

// How long a test waits for a state it needs (a thread asleep, a record
// delivered, a count reached) before it gives up and fails. Long: CI's host
// is shared and slow, and the debug kernel (KASAN, lockdep, kmemleak under
// TCG) runs 5-50x slower than Debian's kernels. Every wait ends as soon as
// the state is reached, so a fast host pays nothing for it.
constexpr std::chrono::seconds kPatience{120};

// How long a test listens for something that must NOT arrive (an event, a
// message) after its last action: long enough for a late delivery through
// a work item on a loaded host. One per test, not one per check.
constexpr std::chrono::milliseconds kQuietPeriod{2000};

// Polls `ready` until it returns true (first at once, then 1 ms apart,
// growing to 20 ms) or `limit` has passed; returns its last answer.
[[nodiscard]] bool WaitFor(const std::function<bool()>& ready,
                           std::chrono::milliseconds limit = kPatience);

// Waits until process PID sleeps ('S'): it has then switched out, and the
// CPU time it ran until then is charged (per-thread metrics, self page).
// Polls for up to kPatience, ending as soon as it sleeps; false if it never did.
[[nodiscard]] bool WaitUntilSleeping(pid_t pid);
// voluntary_ctxt_switches of /proc/self/task/TID/status: counted under the
// runqueue lock right before the switch-out (and tprof's charge of the
// slice), so unlike the state 'S' (set before schedule() is called) an
// increase means the thread is off the CPU or just leaving it.
uint64_t VoluntarySwitches(uint32_t tid);
uint64_t ContextSwitches(uint32_t tid);
// Waits until thread TID of this process has gone to sleep and switched
// out: state 'S' and more voluntary switches than `voluntary_before` (read
// by the thread itself before it went to sleep). Up to kPatience.
[[nodiscard]] bool WaitUntilSwitchedOut(uint32_t tid, uint64_t voluntary_before);
// Waits until the calling thread has been switched out and back in at least
// once since it read ContextSwitches(Gettid()) as `switches_before`: what
// it ran until then is charged (per-thread metrics are charged at the
// switch). Sleeps 1 ms at a time; up to kPatience.
[[nodiscard]] bool SwitchOutSelf(uint64_t switches_before);
// The module charges a thread's last slice at the sched_switch tracepoint, a
// little after the switch count moved (same __schedule call; a vCPU
// preempted in between widens that to milliseconds). For thread TID of this
// process, asleep: waits until the module's totals (which a read takes
// nothing from) hold the time the scheduler counted (its schedstat is final
// once the thread sleeps), within the tests' tolerance (2% or two
// ticks). True at once when per-thread
// time is not accounted; up to kPatience.
[[nodiscard]] bool WaitUntilCharged(const Device& dev, uint32_t tid);

// For a sample-count floor: runs `record(ms)` (a recording of a workload
// that burns `ms` of CPU, returning the samples the test counts in it) with
// ms = first_ms, then twice as long each time, until it returns at least
// `floor` or kPatience has passed; returns the last count. A host that
// delivers fewer samples for the same CPU time (loaded, or the debug
// kernel) gets a longer run, never a weaker check.
uint64_t RecordUntil(unsigned first_ms, uint64_t floor, const std::function<uint64_t(unsigned ms)>& record);

// Burns `ms` of the calling thread's CPU time (not wall time).
void BurnCpu(std::chrono::milliseconds ms);

// Runs `body` in a forked child and returns its exit status (0 = all checks
// passed; 200 if it did not exit normally).
int RunInChild(const std::function<int()>& body);

// RunInChild as uid/gid 65534 without capabilities (100: could not drop them).
int RunUnprivileged(const std::function<int()>& body);

// A PMU program counter "x=bp:0xADDR": a breakpoint at the code of `fn`.
std::string BreakpointAt(void (*fn)());

// Keeps only CAP_PERFMON of the caller's capabilities (effective and
// permitted): root's uid, none of its other powers. False on failure.
bool KeepOnlyPerfmon();

// How long one shell command may run before it is killed (its whole
// process group) and its test fails: a hung command then fails one test,
// under the guest's 10 minutes of console silence that would end the
// whole suite with no summary. The longest command takes ~3 min in the
// debug kernel on a loaded host.
constexpr std::chrono::seconds kCommandLimit{480};

// Runs a shell command, returns its exit status (124 once it was killed at
// kCommandLimit, with a test failure) and captures stdout.
int RunCommand(const std::string& command, std::string* out);

// A shell command's exit status and its stdout and stderr together.
struct Result {
  int rc = -1;
  std::string out;
};

// RunCommand with stderr folded into stdout (a failing check shows both).
Result Sh(const std::string& cmd);

// Runs `sh -c cmd` in dir as nobody (uid/gid 65534, no capabilities),
// stdout and stderr together (kept in dir/nobody.out).
Result RunAsNobody(const std::string& dir, const std::string& cmd);

bool Contains(const std::string& s, const std::string& what);

// part / whole in percent, 0 when whole is 0.
double Percent(uint64_t part, uint64_t whole);

// Forks a child that execs /bin/true and waits for it.
void ForkExecTrue();

// The module file the guest loaded (TPROF_MODULE_PATH, set by tprof-vm).
std::string ModulePath();

// Unloads / loads tprof.ko with the raw syscalls; 0 or errno.
int UnloadModule();
int LoadModule(const std::string& path, const std::string& params = "");

// Sets kernel.perf_event_paranoid for the scope (the guest's Debian default
// is 3: no unprivileged perf at all) and restores the old value after.
class ScopedParanoid {
 public:
  explicit ScopedParanoid(int level);
  ~ScopedParanoid();
  ScopedParanoid(const ScopedParanoid&) = delete;
  ScopedParanoid& operator=(const ScopedParanoid&) = delete;

 private:
  std::string old_;
};

// Writes a file (a sysctl, a module parameter) for the scope and restores
// the old value after.
class ScopedFileValue {
 public:
  ScopedFileValue(const std::string& path, const std::string& value);
  ~ScopedFileValue();
  ScopedFileValue(const ScopedFileValue&) = delete;
  ScopedFileValue& operator=(const ScopedFileValue&) = delete;
  bool ok() const { return ok_; }

 private:
  std::string path_, old_;
  bool ok_ = false;
};

// A setuid-root copy of a guest program (root:root, mode 4755) for the
// scope: what an unprivileged user's process may exec into.
class ScopedSetuidCopy {
 public:
  ScopedSetuidCopy(const std::string& from, const std::string& path);
  ~ScopedSetuidCopy();
  ScopedSetuidCopy(const ScopedSetuidCopy&) = delete;
  ScopedSetuidCopy& operator=(const ScopedSetuidCopy&) = delete;
  bool ok() const { return ok_; }
  const char* path() const { return path_.c_str(); }

 private:
  std::string path_;
  bool ok_ = false;
};

// A parameter of the loaded tprof.ko (/sys/module/tprof/parameters/).
class ScopedModuleParam : public ScopedFileValue {
 public:
  ScopedModuleParam(const std::string& name, const std::string& value)
      : ScopedFileValue("/sys/module/tprof/parameters/" + name, value) {}
};

// Takes `cpu` offline or brings it online (sysfs); false if the kernel has
// no CPU hotplug or refused.
bool SetCpuOnline(int cpu, bool online);

// Whether the guest's CPU has a hardware PMU perf can use: the arm64 guests'
// emulated PMUv3 (armv8_pmuv3*), or a real x86 one ("cpu"); QEMU's x86 TCG
// has none. Tests of hardware counters assert real counts where it does and
// "not available" where it does not.
bool HasHardwarePmu();

// Under tools/tprof-vm --icount (QEMU -icount shift=S) cycles are exactly
// 2^S x instructions: S, or -1 when the guest does not run that way.
int IcountShift();

// A loop of exactly 2 x n instructions (n >= 1), hand-written per
// architecture (subs + b.ne on arm64, dec + jnz on x86-64).
extern "C" void tprof_known_loop(uint64_t n);

// A test with per-thread metrics on (time, dispatches, page-faults: values
// 0, 1, 2) from SetUp, and off after it.
class MetricsOnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto specs = ParseMetricList("time,dispatches,page-faults");
    ASSERT_TRUE(specs);
    auto st = dev_.EnableMetrics(*specs);
    ASSERT_TRUE(st) << st.error().message();
  }
  void TearDown() override { EXPECT_TRUE(dev_.DisableMetrics()); }

  Device dev_ = OpenDeviceOrFail();
};

}  // namespace tprof::test

#endif  // TPROF_TESTS_INTEGRATION_GUEST_ENV_H_
