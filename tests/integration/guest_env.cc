#include "guest_env.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tprof/device/thread_top.h"

namespace tprof::test {

void FailTest(const std::string& why) { throw std::runtime_error(why); }

Device OpenDeviceOrFail() {
  auto dev = Device::Open();
  if (!dev) FailTest("cannot open /dev/tprof: " + dev.error().message());
  return std::move(dev).value();
}

Info GetInfoOrFail(const Device& dev) {
  auto info = dev.GetInfo();
  EXPECT_TRUE(info) << (info ? "" : info.error().message());
  return info ? *info : Info{};
}

uint64_t ThreadCpuNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

uint32_t Gettid() { return static_cast<uint32_t>(::syscall(SYS_gettid)); }

namespace {
std::string TaskFile(uint32_t tid, const char* name) {
  return "/proc/self/task/" + std::to_string(tid) + "/" + name;
}
}  // namespace

namespace {
uint64_t FirstNumber(const std::string& path) {
  std::ifstream in(path);
  uint64_t ns = 0;
  in >> ns;
  return ns;
}
}  // namespace

uint64_t SchedstatNs(uint32_t tid) { return FirstNumber(TaskFile(tid, "schedstat")); }

uint64_t ProcessSchedstatNs(pid_t pid) { return FirstNumber("/proc/" + std::to_string(pid) + "/schedstat"); }

char ThreadState(uint32_t tid) {
  std::ifstream in(TaskFile(tid, "stat"));
  std::string line;
  std::getline(in, line);
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() ? line[paren + 2] : '?';
}

char ProcState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() ? line[paren + 2] : '?';
}

bool WaitFor(const std::function<bool()>& ready, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  auto step = std::chrono::milliseconds(1);
  for (;;) {
    if (ready()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return ready();
    std::this_thread::sleep_for(step);
    step = std::min(step * 2, std::chrono::milliseconds(20));
  }
}

bool WaitUntilSleeping(pid_t pid) {
  return WaitFor([pid] { return ProcState(pid) == 'S'; });
}

uint64_t VoluntarySwitches(uint32_t tid) {
  std::ifstream in(TaskFile(tid, "status"));
  std::string key;
  uint64_t v = 0;
  while (in >> key)
    if (key == "voluntary_ctxt_switches:" && in >> v) return v;
  return 0;
}

uint64_t ContextSwitches(uint32_t tid) {
  std::ifstream in(TaskFile(tid, "status"));
  std::string key;
  uint64_t total = 0, v = 0;
  while (in >> key) {
    if (key == "voluntary_ctxt_switches:" || key == "nonvoluntary_ctxt_switches:") {
      in >> v;
      total += v;
    }
  }
  return total;
}

bool WaitUntilSwitchedOut(uint32_t tid, uint64_t voluntary_before) {
  return WaitFor([&] { return ThreadState(tid) == 'S' && VoluntarySwitches(tid) > voluntary_before; });
}

bool SwitchOutSelf(uint64_t switches_before) {
  const uint32_t self = Gettid();
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  // A sleep whose timer expires before the thread reaches schedule() (a
  // vCPU the host descheduled) does not switch: sleep again until one did.
  while (ContextSwitches(self) <= switches_before) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

bool TimeMatchesSchedstat(uint64_t ours, uint64_t sched) {
  const uint64_t diff = ours > sched ? ours - sched : sched - ours;
  return diff <= 2 * kTickNs || diff <= sched / 20;
}

bool WaitUntilCharged(const Device& dev, uint32_t tid) {
  auto st = dev.GetMetricsStatus();
  const int time = st && st->enabled ? TimeMetricIndex(st->metrics) : -1;
  if (time < 0) return true;
  const uint64_t sched = SchedstatNs(tid);
  return WaitFor([&] {
    auto t = dev.ReadThreadTotals(tid);
    return !t || t->values[size_t(time)] + std::max(2 * kTickNs, sched / 50) >= sched;
  });
}

uint64_t RecordUntil(unsigned first_ms, uint64_t floor, const std::function<uint64_t(unsigned ms)>& record) {
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  uint64_t got = 0;
  for (unsigned ms = first_ms;; ms *= 2) {
    got = record(ms);
    if (got >= floor || std::chrono::steady_clock::now() >= deadline || ::testing::Test::HasFatalFailure())
      return got;
    std::printf("  [%llu of the %llu wanted after %u ms: running again for %u ms]\n",
                static_cast<unsigned long long>(got), static_cast<unsigned long long>(floor), ms, 2 * ms);
  }
}

void BurnCpu(std::chrono::milliseconds ms) {
  uint64_t end = ThreadCpuNs() + uint64_t(ms.count()) * 1'000'000;
  volatile uint64_t sink = 0;
  while (ThreadCpuNs() < end)
    for (int i = 0; i < 1000; ++i) sink = sink + i;
}

int RunInChild(const std::function<int()>& body) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

int RunUnprivileged(const std::function<int()>& body) {
  return RunInChild([&body] {
    if (::setresgid(65534, 65534, 65534) || ::setresuid(65534, 65534, 65534)) return 100;
    return body();
  });
}

std::string BreakpointAt(void (*fn)()) {
  char text[64];
  std::snprintf(text, sizeof(text), "x=bp:0x%llx",
                static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(fn)));
  return text;
}

bool KeepOnlyPerfmon() {
  __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct d[2] = {};
  d[CAP_PERFMON / 32].effective = d[CAP_PERFMON / 32].permitted = 1U << (CAP_PERFMON % 32);
  return ::syscall(SYS_capset, &h, d) == 0;
}

namespace {
// A command that still ran at kCommandLimit, its group killed: the output
// says so and the test fails naming it. 124, as timeout(1) exits.
int KilledAtTheLimit(const std::string& command, const char* as, std::string* out) {
  if (out) *out += "\n[killed: still running after " + std::to_string(kCommandLimit.count()) + " s]\n";
  ADD_FAILURE() << "`" << command.substr(0, 200) << "`" << as << " still ran after " << kCommandLimit.count()
                << " s: killed";
  return 124;
}
}  // namespace

int RunCommand(const std::string& command, std::string* out) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    // Its own process group, which the deadline kills whole (the shell
    // and what it left running in the background).
    ::setpgid(0, 0);
    ::dup2(fds[1], 1);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ::setpgid(pid, pid);  // either side may run first
  ::close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + kCommandLimit;
  bool killed = false;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 && !killed) {
      ::kill(-pid, SIGKILL);
      killed = true;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, killed ? 1000 : static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    // Killed: what is left in the pipe, unless a process in another group
    // holds it open.
    if (killed && (ready <= 0 || left.count() < -5000)) break;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out) out->append(buf, size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (killed) return KilledAtTheLimit(command, "", out);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Result Sh(const std::string& cmd) {
  Result r;
  r.rc = RunCommand("(" + cmd + ") 2>&1", &r.out);
  return r;
}

Result RunAsNobody(const std::string& dir, const std::string& cmd) {
  Result r;
  const std::string log = dir + "/nobody.out";
  pid_t pid = ::fork();
  if (pid < 0) return r;
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) _exit(120);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    if (::setgroups(0, nullptr) || ::setresgid(65534, 65534, 65534) ||
        ::setresuid(65534, 65534, 65534))
      _exit(121);
    if (::chdir(dir.c_str()) != 0) _exit(122);
    ::setpgid(0, 0);  // for the deadline, as in RunCommand
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ::setpgid(pid, pid);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + kCommandLimit;
  pid_t got;
  while ((got = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (got == 0) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  } else if (got != pid) {
    return r;
  }
  std::ifstream in(log);
  std::ostringstream s;
  s << in.rdbuf();
  r.out = s.str();
  if (got == 0)
    r.rc = KilledAtTheLimit(cmd, " as nobody", &r.out);
  else
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

bool Contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

double Percent(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

void ForkExecTrue() {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl("/bin/true", "true", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

std::string ModulePath() {
  const char* p = std::getenv("TPROF_MODULE_PATH");
  return p ? p : "/lib/tprof/tprof.ko";
}

int UnloadModule() {
  return ::syscall(SYS_delete_module, "tprof", O_NONBLOCK) == 0 ? 0 : errno;
}

int LoadModule(const std::string& path, const std::string& params) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int ret = ::syscall(SYS_finit_module, fd, params.c_str(), 0) == 0 ? 0 : errno;
  ::close(fd);
  return ret;
}

namespace {
const char kParanoid[] = "/proc/sys/kernel/perf_event_paranoid";
void WriteParanoid(const std::string& v) {
  FILE* f = std::fopen(kParanoid, "w");
  ASSERT_TRUE(f) << kParanoid;
  std::fputs(v.c_str(), f);
  ASSERT_EQ(std::fclose(f), 0) << "cannot write " << v << " to " << kParanoid;
}
}  // namespace

ScopedParanoid::ScopedParanoid(int level) {
  if (FILE* f = std::fopen(kParanoid, "r")) {
    char buf[16] = {};
    if (std::fgets(buf, sizeof(buf), f)) old_ = buf;
    std::fclose(f);
  }
  WriteParanoid(std::to_string(level));
}

ScopedParanoid::~ScopedParanoid() {
  if (!old_.empty()) WriteParanoid(old_);
}

namespace {
bool WriteFile(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  out << value << std::flush;
  return bool(out);
}
}  // namespace

ScopedSetuidCopy::ScopedSetuidCopy(const std::string& from, const std::string& path)
    : path_(path) {
  std::error_code ec;
  std::filesystem::copy_file(from, path, std::filesystem::copy_options::overwrite_existing, ec);
  ok_ = !ec && ::chown(path.c_str(), 0, 0) == 0 && ::chmod(path.c_str(), 04755) == 0;
  EXPECT_TRUE(ok_) << "installing a setuid-root copy of " << from << " as " << path;
}

ScopedSetuidCopy::~ScopedSetuidCopy() { ::unlink(path_.c_str()); }

ScopedFileValue::ScopedFileValue(const std::string& path, const std::string& value) : path_(path) {
  std::ifstream in(path_);
  std::getline(in, old_);
  ok_ = WriteFile(path_, value);
}

ScopedFileValue::~ScopedFileValue() {
  if (!old_.empty()) WriteFile(path_, old_);
}

bool HasHardwarePmu() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/bus/event_source/devices", ec)) {
    const std::string name = e.path().filename().string();
    if (name == "cpu" || name.rfind("armv8", 0) == 0) return true;
  }
  return false;
}

int IcountShift() {
  const char* s = std::getenv("TPROF_VM_ICOUNT_SHIFT");
  return s && *s ? std::atoi(s) : -1;
}

extern "C" __attribute__((noinline)) void tprof_known_loop(uint64_t n) {
#if defined(__aarch64__)
  __asm__ volatile("1: subs %0, %0, #1\n\tb.ne 1b" : "+r"(n) : : "cc");
#elif defined(__x86_64__)
  __asm__ volatile("1: dec %0\n\tjnz 1b" : "+r"(n) : : "cc");
#else
#error "tprof_known_loop: no hand-written loop for this architecture"
#endif
}

bool SetCpuOnline(int cpu, bool online) {
  return WriteFile("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/online", online ? "1" : "0");
}

}  // namespace tprof::test
