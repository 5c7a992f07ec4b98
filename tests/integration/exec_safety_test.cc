// What an unprivileged user gets when a process they may observe execs a
// setuid-root program: nothing. Every way of attaching (PMU programs with
// breakpoints, watchpoints, page faults, a syscall tracepoint, thresholds
// and rules; sampling; the self page of per-thread metrics) is tried on a
// child that then execs a setuid-root copy of tprof-wl-suid-target
// (tests/workloads/suid_target.c, static and non-PIE: its addresses are
// known). The setuid program's output must be intact, it must not be
// killed by a trap, and nothing of it may be counted, sampled, mapped or
// named in what the user receives. Also: the user-namespace form of
// ptrace's capability rule, kernel breakpoints needing CAP_SYS_ADMIN, and
// PMU programs freed while their handlers run (for the debug kernel).
#include <elf.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/tprof.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fresh_pages.h"
#include "guest_env.h"
#include "session_records.h"
#include "tprof/device/pmu_program.h"
#include "tprof/device/sampling.h"

namespace tprof::test {
namespace {

using pmu::Monitor;
using pmu::Program;
using pmu::ProgramSpec;

constexpr const char* kTarget = "/usr/bin/tprof-wl-suid-target";
constexpr const char* kSuidTarget = "/tmp/tprof-wl-suid-target-suid";
constexpr const char* kMessage = "tprof-wl-suid-target: this message came out intact\n";

// Where the target's symbols are (its --addresses mode, run as a plain
// program): the same in the setuid copy, which is not position-independent.
struct TargetAddresses {
  uint64_t func = 0, var = 0, msg = 0, bss = 0, text_start = 0, text_end = 0;
  int bss_pages = 0;
};

std::optional<TargetAddresses> ReadTargetAddresses() {
  Result r = Sh(std::string(kTarget) + " --addresses");
  TargetAddresses a;
  std::istringstream in(r.out);
  std::string w[7];
  in >> w[0] >> std::hex >> a.func >> w[1] >> a.var >> w[2] >> a.msg >> w[3] >> a.bss >> w[4] >>
      std::dec >> a.bss_pages >> w[5] >> std::hex >> a.text_start >> a.text_end;
  if (r.rc != 0 || !in || w[0] != "func" || w[3] != "bss" || w[5] != "text") {
    ADD_FAILURE() << kTarget << " --addresses: " << r.out;
    return std::nullopt;
  }
  return a;
}

// The setuid-root copy of the target for the scope of a test.
class SetuidCopy : public ScopedSetuidCopy {
 public:
  SetuidCopy() : ScopedSetuidCopy(kTarget, kSuidTarget) {}
};

// The exit status as the tests compare it: the exit code, or 128 + the
// signal that killed it.
int StatusCode(int st) {
  return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 255;
}

// A forked child that waits on a pipe, then (after `before_exec`, in the
// child) execs `path` with `args`; its standard output is captured and its
// standard input is a pipe the test closes in Wait().
class PendingExec {
 public:
  PendingExec(const std::string& path, const std::vector<std::string>& args,
              const std::function<void()>& before_exec = {}) {
    int go[2], out[2], in[2];
    if (::pipe(go) || ::pipe(out) || ::pipe(in)) return;
    std::vector<std::string> argv_s = {path};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (auto& s : argv_s) argv.push_back(s.data());
      argv.push_back(nullptr);
      ::close(go[1]), ::close(out[0]), ::close(in[1]);
      char b;
      if (::read(go[0], &b, 1) != 1) ::_exit(126);
      if (before_exec) before_exec();
      ::dup2(out[1], 1);
      ::dup2(in[0], 0);
      ::execv(path.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(go[0]), ::close(out[1]), ::close(in[0]);
    go_ = go[1], out_ = out[0], in_ = in[1];
  }
  ~PendingExec() {
    if (pid_ > 0 && !waited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    for (int fd : {go_, out_, in_})
      if (fd >= 0) ::close(fd);
  }
  PendingExec(const PendingExec&) = delete;
  PendingExec& operator=(const PendingExec&) = delete;

  pid_t pid() const { return pid_; }
  bool Release() {
    bool ok = ::write(go_, "x", 1) == 1;
    ::close(go_);
    go_ = -1;
    return ok;
  }
  // Reads one line of its output (for "hold" runs, still alive after it).
  std::string ReadLine() {
    std::string line;
    char c;
    while (::read(out_, &c, 1) == 1) {
      line += c;
      if (c == '\n') break;
    }
    output_ += line;
    return line;
  }
  // Closes its input, reads the rest of its output, reaps it: StatusCode().
  int Wait(std::string* output) {
    ::close(in_);
    in_ = -1;
    char buf[512];
    ssize_t n;
    while ((n = ::read(out_, buf, sizeof(buf))) > 0) output_.append(buf, size_t(n));
    int st = 0;
    if (::waitpid(pid_, &st, 0) != pid_) return 254;
    waited_ = true;
    if (output) *output = output_;
    return StatusCode(st);
  }

 private:
  pid_t pid_ = -1;
  int go_ = -1, out_ = -1, in_ = -1;
  bool waited_ = false;
  std::string output_;
};

// Syscall tracepoints need tracefs; the guest's init does not mount it.
void MountTracefs() {
  struct stat st;
  if (::stat("/sys/kernel/tracing/events", &st) == 0) return;
  ::mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr);
}

std::string Hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof(b), "0x%llx", (unsigned long long)v);
  return b;
}

int CreateErrno(const Device& dev, const tprof_pmu_program& p) {
  auto prog = Program::Create(dev, p);
  return prog ? 0 : prog.error().code().value();
}

// Events for up to `ms` (until none came for that long).
std::vector<tprof_pmu_event> Drain(Monitor& m, int ms) {
  std::vector<tprof_pmu_event> out;
  for (;;) {
    auto n = m.Wait(std::chrono::milliseconds(ms), [&](const tprof_pmu_event& e) { out.push_back(e); });
    if (!n || *n == 0) break;
  }
  return out;
}

// The file offset of virtual address `vaddr` in an ELF image (program headers).
std::optional<uint64_t> FileOffset(const char* image, size_t size, uint64_t vaddr) {
  if (size < sizeof(Elf64_Ehdr)) return std::nullopt;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(image);
  for (int i = 0; i < eh->e_phnum; ++i) {
    const auto* ph = reinterpret_cast<const Elf64_Phdr*>(image + eh->e_phoff + i * eh->e_phentsize);
    if (ph->p_type == PT_LOAD && vaddr >= ph->p_vaddr && vaddr < ph->p_vaddr + ph->p_filesz)
      return vaddr - ph->p_vaddr + ph->p_offset;
  }
  return std::nullopt;
}

// The arm64 exploit (on x86 too): a breakpoint (with a threshold)
// at the setuid program's rodata string and one at its function, placed in
// the user's own PROT_EXEC mapping of the setuid FILE. The old arm64 module
// made them uprobes of the file, which wrote BRK instructions into the
// setuid process's copy of the string (it came out cut after a few
// characters) and counted its function. Now: the string is intact, the
// program exits 0 (no SIGTRAP/SIGILL), nothing is counted, no event comes.
TEST(ExecSafety, BreakpointsInAMappingOfTheSetuidFileDoNotReachIt) {
  auto addr = ReadTargetAddresses();
  ASSERT_TRUE(addr);
  SetuidCopy suid;
  ASSERT_TRUE(suid.ok());
  ScopedParanoid level(2);
  const TargetAddresses a = *addr;
  int rc = RunUnprivileged([a] {
    if (prctl(PR_SET_DUMPABLE, 1)) return 1;
    int fd = ::open(kSuidTarget, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || ::fstat(fd, &st)) return 2;
    size_t size = size_t(st.st_size);
    char* map = static_cast<char*>(::mmap(nullptr, size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0));
    if (map == MAP_FAILED) return 3;
    auto msg_off = FileOffset(map, size, a.msg), func_off = FileOffset(map, size, a.func);
    if (!msg_off || !func_off) return 4;
    uint64_t msg_at = uint64_t(uintptr_t(map)) + *msg_off, func_at = uint64_t(uintptr_t(map)) + *func_off;
    auto dev = Device::Open();
    if (!dev) return 5;
    ProgramSpec spec;
    if (!spec.AddCounter("m=bp:" + Hex(msg_at), nullptr) || !spec.AddCounter("f=bp:" + Hex(func_at), nullptr) ||
        !spec.AddThreshold("m>=1") || !spec.AddThreshold("f>=1"))
      return 6;
    // The process (with inherit): the child forked below is in it.
    auto prog = Program::Create(*dev, spec.Build(TPROF_PMU_SCOPE_PROCESS, 0));
    if (!prog) {
      std::fprintf(stderr, "PMU_CREATE: %s\n", prog.error().message().c_str());
      return 7;
    }
    auto mon = Monitor::Open();
    if (!mon || !mon->Subscribe(*prog)) return 8;
    PendingExec child(kSuidTarget, {"100", "4", "0"});
    if (child.pid() < 0 || !child.Release()) return 9;
    std::string out;
    int status = child.Wait(&out);
    auto v = prog->Read();
    auto events = Drain(*mon, 500);
    int bad = 0;
    if (status != 0) bad |= 1 << 4;
    if (out != kMessage) bad |= 1 << 5;
    if (!v || v->values[0] || v->values[1]) bad |= 1 << 6;
    if (!events.empty()) bad |= 1 << 7;
    if (bad)
      std::fprintf(stderr, "status %d output \"%s\" values m=%llu f=%llu events %zu\n", status, out.c_str(),
                   v ? (unsigned long long)v->values[0] : ~0ULL, v ? (unsigned long long)v->values[1] : ~0ULL,
                   events.size());
    return bad;
  });
  EXPECT_EQ(rc, 0) << "16: the setuid program did not exit 0 (a trap killed it: 128+signal above); "
                      "32: its string came out changed; 64: the program counted its execution; "
                      "128: an event came; 7: creation failed; other small values: setup";
}

// Everything a PMU program of scope PROCESS counts on a child stops at the
// child's exec of the setuid program: a breakpoint on its function, a
// watchpoint on its variable, page faults with a data range on its pages
// and the getppid tracepoint, each with a threshold, and a rule. The same
// program on the plain (not setuid) copy counts each exactly: the control.
TEST(ExecSafety, ProcessCountersStopAtTheSetuidExec) {
  auto addr = ReadTargetAddresses();
  ASSERT_TRUE(addr);
  SetuidCopy suid;
  ASSERT_TRUE(suid.ok());
  MountTracefs();
  ScopedParanoid level(2);
  constexpr long kCalls = 200, kPages = 8;
  const long page = FreshPages::PageSize();
  ProgramSpec spec;  // built as root: the tracepoint's id is in tracefs
  ASSERT_TRUE(spec.AddCounter("b=bp:" + Hex(addr->func), nullptr));
  ASSERT_TRUE(spec.AddCounter("w=w:" + Hex(addr->var) + "/8", nullptr));
  ASSERT_TRUE(spec.AddCounter("f=page-faults@data:" + Hex(addr->bss) + "-" + Hex(addr->bss + kPages * page),
                              nullptr));
  auto g = spec.AddCounter("g=syscalls:sys_enter_getppid", nullptr);
  ASSERT_TRUE(g) << g.error().message();
  ASSERT_TRUE(spec.AddThreshold("b>=10"));
  ASSERT_TRUE(spec.AddThreshold("g>=10"));
  ASSERT_TRUE(spec.AddThreshold("f>=2"));
  ASSERT_TRUE(spec.AddRule("w>5"));
  for (int setuid : {0, 1}) {
    int rc = RunUnprivileged([&spec, setuid] {
      // An exit status has 8 bits: setup failures 1 to 3, then one bit per check.
      if (prctl(PR_SET_DUMPABLE, 1)) return 1;
      auto dev = Device::Open();
      if (!dev) return 1;
      PendingExec child(setuid ? kSuidTarget : kTarget, {std::to_string(kCalls), std::to_string(kPages), "0"});
      if (child.pid() < 0) return 2;
      auto prog = Program::Create(*dev, spec.Build(TPROF_PMU_SCOPE_PROCESS, uint32_t(child.pid())));
      if (!prog) {
        std::fprintf(stderr, "PMU_CREATE: %s\n", prog.error().message().c_str());
        return 2;
      }
      auto mon = Monitor::Open();
      if (!mon || !mon->Subscribe(*prog) || !child.Release()) return 3;
      std::string out;
      int status = child.Wait(&out);
      auto v = prog->Read();
      if (!v) return 3;
      auto events = Drain(*mon, 500);
      size_t of_child = 0;
      for (const auto& e : events) of_child += e.pid == uint32_t(child.pid());
      int bad = 0;
      if (status != 0 || out != kMessage) bad |= 1 << 2;
      const uint64_t want[4] = {uint64_t(kCalls), uint64_t(kCalls), uint64_t(kPages), uint64_t(kCalls)};
      for (int i = 0; i < 4; ++i)
        if (v->values[i] != (setuid ? 0 : want[i])) bad |= 1 << (3 + i);
      // Control: the three thresholds and the rule fire once each.
      if (setuid ? events.size() != 0 : of_child != 4) bad |= 1 << 7;
      if (bad)
        std::fprintf(stderr, "%s: status %d, output \"%s\", b=%llu w=%llu f=%llu g=%llu, %zu events (%zu of the child)\n",
                     setuid ? "setuid" : "plain", status, out.c_str(), (unsigned long long)v->values[0],
                     (unsigned long long)v->values[1], (unsigned long long)v->values[2],
                     (unsigned long long)v->values[3], events.size(), of_child);
      return bad;
    });
    EXPECT_EQ(rc, 0) << (setuid ? "setuid exec" : "plain exec (control)")
                     << ": 4 exit status or output, 8 b (breakpoint), 16 w (watchpoint), 32 f (page "
                        "faults), 64 g (getppid tracepoint) not "
                     << (setuid ? "0" : "exact") << ", 128 events " << (setuid ? "came" : "missing")
                     << "; 2 creation failed, 1 or 3 setup (the values are printed above)";
  }
}

// The self page of a clone(CLONE_VM) child is shared with its parent: once
// the child execs the setuid program, the page is retired (TPROF_SELF_LIVE
// clear) and does not count the setuid image's CPU time. The control (the
// plain program) keeps it live and counting.
class ExecSafetyMetrics : public MetricsOnTest {};

struct CloneArgs {
  int dev_fd, ready_w, go_r, out_w, in_r;
  char* const* argv;
  volatile tprof_self_page* page = nullptr;
};

int CloneChild(void* p) {
  auto* a = static_cast<CloneArgs*>(p);
  void* m = ::mmap(nullptr, size_t(::sysconf(_SC_PAGESIZE)), PROT_READ, MAP_SHARED, a->dev_fd,
                   TPROF_SELF_PAGE_OFFSET);
  a->page = m == MAP_FAILED ? nullptr : static_cast<tprof_self_page*>(m);
  if (::write(a->ready_w, "x", 1) != 1) ::_exit(125);
  char b;
  if (::read(a->go_r, &b, 1) != 1) ::_exit(126);
  ::dup2(a->out_w, 1);
  ::dup2(a->in_r, 0);
  ::execv(a->argv[0], a->argv);
  ::_exit(127);
}

// A stable copy of the page (its seqcount).
tprof_self_page Snapshot(volatile tprof_self_page* p) {
  tprof_self_page s;
  for (;;) {
    uint32_t seq = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE);
    if (seq & 1) continue;
    std::memcpy(&s, const_cast<tprof_self_page*>(p), sizeof(s));
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&p->seq, __ATOMIC_RELAXED) == seq) return s;
  }
}

TEST_F(ExecSafetyMetrics, CloneVmSelfPageIsRetiredAtTheSetuidExec) {
  SetuidCopy suid;
  ASSERT_TRUE(suid.ok());
  constexpr uint64_t kBurnMs = 400;
  for (int setuid : {0, 1}) {
    int rc = RunUnprivileged([setuid] {
      if (prctl(PR_SET_DUMPABLE, 1)) return 1;
      auto dev = Device::Open();
      if (!dev) return 2;
      int ready[2], go[2], out[2], in[2];
      // O_CLOEXEC: the child shares no descriptor table with us, and the
      // program it execs must keep none of these ends (or its input never ends).
      if (::pipe2(ready, O_CLOEXEC) || ::pipe2(go, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC) ||
          ::pipe2(in, O_CLOEXEC))
        return 3;
      std::string path = setuid ? kSuidTarget : kTarget, n = "10", k = "0", ms = std::to_string(kBurnMs),
                  hold = "hold";
      char* argv[] = {path.data(), n.data(), k.data(), ms.data(), hold.data(), nullptr};
      CloneArgs a{dev->fd(), ready[1], go[0], out[1], in[0], argv};
      const size_t stack_size = 256 << 10;
      char* stack = static_cast<char*>(
          ::mmap(nullptr, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0));
      if (stack == MAP_FAILED) return 4;
      pid_t c = ::clone(CloneChild, stack + stack_size, CLONE_VM | SIGCHLD, &a);
      if (c < 0) return 5;
      ::close(ready[1]), ::close(go[0]), ::close(out[1]), ::close(in[0]);
      char b;
      if (::read(ready[0], &b, 1) != 1 || !a.page) {
        ::kill(c, SIGKILL);
        ::waitpid(c, nullptr, 0);
        return 6;
      }
      tprof_self_page before = Snapshot(a.page);
      int bad = 0;
      if (!(before.flags & TPROF_SELF_LIVE) || before.tid != uint32_t(c) ||
          before.time_index >= TPROF_MAX_METRICS)
        bad |= 1 << 3;
      const uint32_t t = before.time_index < TPROF_MAX_METRICS ? before.time_index : 0;
      if (::write(go[1], "x", 1) != 1) return 7;
      // The program burns its CPU time, prints its line and holds: once
      // it sleeps in that read it has switched out, and its burn is
      // charged (the line alone can arrive before that switch).
      std::string line;
      for (char ch; ::read(out[0], &ch, 1) == 1 && ch != '\n';) line += ch;
      if (!WaitUntilSleeping(c)) bad |= 1 << 4;
      tprof_self_page during = Snapshot(a.page);
      // All the child ran, before its exec and after: at least its burn.
      const uint64_t child_ms = ProcessSchedstatNs(c) / 1'000'000;
      ::close(in[1]);
      int st = 0;
      ::waitpid(c, &st, 0);
      uint64_t grew_ms = (during.total[t] - before.total[t]) / 1'000'000;
      if (StatusCode(st) != 0 || line + "\n" != kMessage) bad |= 1 << 4;
      if (setuid) {
        if (during.flags & TPROF_SELF_LIVE) bad |= 1 << 5;
        // The page may hold the child's time up to the exec, never its
        // burn: the scheduler's count less the burn, with the margin for
        // interrupts that TooSmallBufferLosesNothing explains. Not a fixed
        // bound: on a loaded host one slice before the exec took >100 ms.
        const uint64_t before_exec_ms = child_ms > kBurnMs ? child_ms - kBurnMs : 0;
        if (grew_ms > before_exec_ms + before_exec_ms / 5 + 2 * kTickNs / 1'000'000) bad |= 1 << 6;
      } else {
        if (!(during.flags & TPROF_SELF_LIVE)) bad |= 1 << 5;
        if (grew_ms < kBurnMs / 2) bad |= 1 << 6;
      }
      if (bad)
        std::fprintf(stderr,
                     "%s: flags %#x -> %#x, time grew %llu ms (the child ran %llu ms), status %d, output \"%s\"\n",
                     setuid ? "setuid" : "plain", before.flags, during.flags, (unsigned long long)grew_ms,
                     (unsigned long long)child_ms, StatusCode(st), line.c_str());
      return bad;
    });
    EXPECT_EQ(rc, 0) << (setuid ? "setuid exec" : "plain exec (control)")
                     << ": 8 the page did not describe the child, 16 exit status or output, 32 TPROF_SELF_LIVE "
                     << (setuid ? "still set" : "cleared") << ", 64 total[time] "
                     << (setuid ? "grew by the setuid program's CPU time" : "did not grow by its CPU time")
                     << "; 6 the child could not map its page";
  }
}

// Spins for a random 0 to `max_us` microseconds of wall time.
void SpinRandomly(std::mt19937& rng, int max_us) {
  auto end = std::chrono::steady_clock::now() +
             std::chrono::microseconds(std::uniform_int_distribution<int>(0, max_us)(rng));
  while (std::chrono::steady_clock::now() < end) {
  }
}

// A PROCESS-scope program created while its target execs the setuid
// program: it either fails (EACCES: the exec came first; ESRCH) or counts
// nothing of the setuid image (its getppid calls; the child itself calls
// none before the exec).
TEST(ExecSafety, ProgramCreatedDuringTheSetuidExecCountsNothing) {
  SetuidCopy suid;
  ASSERT_TRUE(suid.ok());
  MountTracefs();
  ScopedParanoid level(2);
  ProgramSpec spec;
  auto st = spec.AddCounter("g=syscalls:sys_enter_getppid", nullptr);
  ASSERT_TRUE(st) << st.error().message();
  int rc = RunUnprivileged([&spec] {
    if (prctl(PR_SET_DUMPABLE, 1)) return 1;
    auto dev = Device::Open();
    if (!dev) return 2;
    std::mt19937 rng(std::random_device{}());
    int created = 0, refused = 0, bad = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(12);
    for (int i = 0; i < 150 && std::chrono::steady_clock::now() < deadline; ++i) {
      const uint32_t seed = uint32_t(rng());
      PendingExec child(kSuidTarget, {"50", "0", "0"}, [seed] {
        std::mt19937 r(seed);
        SpinRandomly(r, 3000);
      });
      if (child.pid() < 0 || !child.Release()) return 3;
      SpinRandomly(rng, 3000);
      auto prog = Program::Create(*dev, spec.Build(TPROF_PMU_SCOPE_PROCESS, uint32_t(child.pid())));
      std::string out;
      int status = child.Wait(&out);
      if (status != 0 || out != kMessage) bad |= 1 << 2;
      if (!prog) {
        int e = prog.error().code().value();
        if (e != EACCES && e != ESRCH) {
          std::fprintf(stderr, "iteration %d: PMU_CREATE: %s\n", i, prog.error().message().c_str());
          bad |= 1 << 3;
        }
        ++refused;
        continue;
      }
      ++created;
      auto v = prog->Read();
      if (!v || v->values[0] != 0) {
        std::fprintf(stderr, "iteration %d: the program counted %llu of the setuid program's 50 getppid calls\n",
                     i, v ? (unsigned long long)v->values[0] : ~0ULL);
        bad |= 1 << 4;
      }
    }
    std::fprintf(stderr, "%d programs created, %d refused\n", created, refused);
    return bad;
  });
  EXPECT_EQ(rc, 0) << "4: the setuid program failed or its output changed; 8: creation failed with an "
                      "errno other than EACCES/ESRCH; 16: a program counted the setuid image's calls";
}

// The same race with sampling: a session started on the child while it
// execs the setuid program has no sample in the setuid image, and no COMM
// or MAP of it.
TEST(ExecSafety, SessionStartedDuringTheSetuidExecSeesNothingOfIt) {
  auto addr = ReadTargetAddresses();
  ASSERT_TRUE(addr);
  SetuidCopy suid;
  ASSERT_TRUE(suid.ok());
  ScopedParanoid level(2);
  const TargetAddresses a = *addr;
  int rc = RunUnprivileged([a] {
    if (prctl(PR_SET_DUMPABLE, 1)) return 1;
    std::mt19937 rng(std::random_device{}());
    int started = 0, refused = 0, bad = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(12);
    for (int i = 0; i < 60 && std::chrono::steady_clock::now() < deadline; ++i) {
      const uint32_t seed = uint32_t(rng());
      PendingExec child(kSuidTarget, {"50", "0", "20"}, [seed] {
        std::mt19937 r(seed);
        SpinRandomly(r, 3000);
      });
      if (child.pid() < 0 || !child.Release()) return 3;
      SpinRandomly(rng, 3000);
      SamplingOptions o;
      o.pid = uint32_t(child.pid());
      auto s = SamplingSession::Start(o);
      std::string out;
      int status = child.Wait(&out);
      if (status != 0 || out != kMessage) bad |= 1 << 2;
      if (!s) {
        int e = s.error().code().value();
        if (e != EACCES && e != ESRCH) {
          std::fprintf(stderr, "iteration %d: start: %s\n", i, s.error().message().c_str());
          bad |= 1 << 3;
        }
        ++refused;
        continue;
      }
      ++started;
      bool ok = false;
      auto recs = StopAndDrain(*s, &ok);
      if (!ok) bad |= 1 << 4;
      for (const Rec& r : recs) {
        if (r.pid != uint32_t(child.pid())) continue;
        bool leak = (r.type == TPROF_REC_SAMPLE && r.ip >= a.text_start && r.ip < a.text_end) ||
                    (r.type == TPROF_REC_COMM && r.kind == TPROF_COMM_EXEC) ||
                    (r.type == TPROF_REC_MAP && r.text.find("suid-target") != std::string::npos);
        if (leak) {
          std::fprintf(stderr, "iteration %d: record type %u ip %#llx \"%s\" of the setuid image\n", i, r.type,
                       (unsigned long long)r.ip, r.text.c_str());
          bad |= 1 << 5;
        }
      }
    }
    std::fprintf(stderr, "%d sessions started, %d refused\n", started, refused);
    return bad;
  });
  EXPECT_EQ(rc, 0) << "4: the setuid program failed or its output changed; 8: start failed with an errno "
                      "other than EACCES/ESRCH; 16: the session misbehaved; 32: a sample, COMM or MAP of "
                      "the setuid image";
}

// Becomes uid/gid 65534 like a user who logged in: dumpable again.
bool DropToNobody() {
  return ::setgroups(0, nullptr) == 0 && ::setresgid(65534, 65534, 65534) == 0 &&
         ::setresuid(65534, 65534, 65534) == 0 && ::prctl(PR_SET_DUMPABLE, 1) == 0;
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text << std::flush;
  return bool(f);
}

// ptrace's capability rule holds only inside one user namespace: a caller
// with every capability in its own child namespace does not get a same-uid
// process outside that kept capabilities (PMU_CREATE, sampling and
// THREAD_READ are all EACCES), as cap_ptrace_access_check() decides.
class ExecSafetyUserns : public MetricsOnTest {};

TEST_F(ExecSafetyUserns, CallerInAChildUserNamespaceDoesNotGetACapableSameUidProcess) {
  ScopedParanoid level(2);
  std::optional<ScopedFileValue> userns_clone, max_userns;
  if (::access("/proc/sys/kernel/unprivileged_userns_clone", F_OK) == 0)
    userns_clone.emplace("/proc/sys/kernel/unprivileged_userns_clone", "1");
  max_userns.emplace("/proc/sys/user/max_user_namespaces", "1000");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t t = ::fork();
  ASSERT_GE(t, 0);
  if (t == 0) {
    ::close(ready[0]);
    // Keeps root's permitted capabilities as uid 65534.
    if (::prctl(PR_SET_KEEPCAPS, 1) || !DropToNobody()) ::_exit(1);
    if (::write(ready[1], "x", 1) != 1) ::_exit(2);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char b;
  ASSERT_EQ(::read(ready[0], &b, 1), 1) << "the target did not set itself up";
  ::close(ready[0]);
  int rc = RunUnprivileged([t] {
    if (prctl(PR_SET_DUMPABLE, 1)) return 1;
    if (::unshare(CLONE_NEWUSER)) {
      std::perror("unshare(CLONE_NEWUSER)");
      return 2;
    }
    if (!WriteFile("/proc/self/setgroups", "deny") || !WriteFile("/proc/self/uid_map", "0 65534 1") ||
        !WriteFile("/proc/self/gid_map", "0 65534 1"))
      return 3;
    auto dev = Device::Open();
    if (!dev) return 4;
    int bad = 0;
    ProgramSpec spec;
    if (!spec.AddCounter("f=page-faults", nullptr)) return 5;
    int e = CreateErrno(*dev, spec.Build(TPROF_PMU_SCOPE_PROCESS, uint32_t(t)));
    if (e != EACCES) std::fprintf(stderr, "PMU_CREATE: errno %d\n", e), bad |= 1 << 3;
    SamplingOptions o;
    o.pid = uint32_t(t);
    auto s = SamplingSession::Start(o);
    e = s ? 0 : s.error().code().value();
    if (e != EACCES) std::fprintf(stderr, "sampling: errno %d\n", e), bad |= 1 << 4;
    auto r = dev->ReadThread(uint32_t(t));
    e = r ? 0 : r.error().code().value();
    if (e != EACCES) std::fprintf(stderr, "THREAD_READ: errno %d\n", e), bad |= 1 << 5;
    return bad;
  });
  ::kill(t, SIGKILL);
  ::waitpid(t, nullptr, 0);
  EXPECT_EQ(rc, 0) << "not EACCES: 8 PMU_CREATE, 16 sampling, 32 THREAD_READ; 2 no user namespace";
}

// A kernel symbol's address from /proc/kallsyms (as root), 0 if absent.
uint64_t KernelSymbol(const std::string& want) {
  std::ifstream in("/proc/kallsyms");
  std::string addr, type, name;
  while (in >> addr >> type >> name) {
    if (name == want) return std::stoull(addr, nullptr, 16);
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

// Breakpoints and watchpoints at kernel addresses need CAP_SYS_ADMIN in
// every scope: EPERM with CAP_PERFMON alone; accepted with CAP_SYS_ADMIN
// (on arm64 a kernel watchpoint of a thread or process is EINVAL even then).
TEST(ExecSafety, KernelBreakpointsAndWatchpointsNeedSysAdminInEveryScope) {
#if defined(__aarch64__)
  const uint64_t text = KernelSymbol("__arm64_sys_getppid");
#else
  const uint64_t text = KernelSymbol("__x64_sys_getppid");
#endif
  uint64_t data = KernelSymbol("jiffies_64");
  if (!data) data = KernelSymbol("jiffies");
  // Debian's arm64 6.1 lists no data symbols (no KALLSYMS_ALL): any kernel
  // address is one for the permission check, its handler's text too.
  if (!data) data = text;
  ASSERT_NE(text, 0u);
  ASSERT_NE(data, 0u);
  ProgramSpec bp, watch;
  ASSERT_TRUE(bp.AddCounter("k=bp:" + Hex(text), nullptr));
  ASSERT_TRUE(watch.AddCounter("j=w:" + Hex(data) + "/8", nullptr));
  for (int perfmon_only : {0, 1}) {
    int rc = RunInChild([&] {
      if (perfmon_only && !KeepOnlyPerfmon()) return 1;
      auto dev = Device::Open();
      if (!dev) return 2;
      int bad = 0, bit = 2;  // 6 bits from 4: an exit status has 8
      for (const ProgramSpec* s : {&bp, &watch}) {
        for (uint32_t scope : {TPROF_PMU_SCOPE_THREAD, TPROF_PMU_SCOPE_PROCESS, TPROF_PMU_SCOPE_CPUS}) {
          int want = perfmon_only ? EPERM : 0;
#if defined(__aarch64__)
          // arm64's perf takes no per-task kernel watchpoint
          // (hw_breakpoint_arch_parse(): EINVAL); its kernel breakpoints are kprobes.
          if (!perfmon_only && s == &watch && scope != TPROF_PMU_SCOPE_CPUS) want = EINVAL;
#endif
          int e = CreateErrno(*dev, s->Build(scope, 0));
          if (e != want) {
            std::fprintf(stderr, "%s, scope %u: errno %d\n", s == &bp ? "breakpoint" : "watchpoint", scope, e);
            bad |= 1 << bit;
          }
          ++bit;
        }
      }
      return bad;
    });
    EXPECT_EQ(rc, 0) << (perfmon_only ? "CAP_PERFMON only: not EPERM" : "CAP_SYS_ADMIN: refused")
                     << " (breakpoint: 4 THREAD, 8 PROCESS, 16 CPUS; watchpoint: 32, 64, 128)";
  }
}

// A PMU program freed while its handler may run: one thread takes page
// faults without pause while another creates and closes programs on it
// (a page-fault counter with a threshold at every fault, so the handler
// runs at each), with UDP on loopback for softirqs. Pass: no kernel report
// (the debug kernel's KASAN), and every creation worked.
TEST(ExecSafety, ProgramsClosedWhileTheirHandlersRun) {
  Device dev = OpenDeviceOrFail();
  std::atomic<bool> stop{false};
  std::atomic<uint32_t> toucher_tid{0};
  std::thread toucher([&] {
    toucher_tid = Gettid();
    while (!stop) {
      FreshPages p(16);
      if (p.base == MAP_FAILED) continue;
      for (long i = 0; i < p.n; ++i) p.base[i * FreshPages::PageSize()] = 1;
    }
  });
  std::thread udp([&] {
    int s = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    if (s < 0 || ::bind(s, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) ||
        ::getsockname(s, reinterpret_cast<sockaddr*>(&sa), &len))
      return;
    char buf[512] = {};
    while (!stop) {
      ::sendto(s, buf, sizeof(buf), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
      ::recv(s, buf, sizeof(buf), MSG_DONTWAIT);
    }
    ::close(s);
  });
  while (!toucher_tid) std::this_thread::yield();
  ProgramSpec spec;
  ASSERT_TRUE(spec.AddCounter("f=page-faults", nullptr));
  ASSERT_TRUE(spec.AddThreshold("f>=1/1"));
  int created = 0, failed = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  for (int i = 0; i < 400 && std::chrono::steady_clock::now() < deadline; ++i) {
    const bool thread = i % 2 == 0;
    auto p = Program::Create(dev, spec.Build(thread ? TPROF_PMU_SCOPE_THREAD : TPROF_PMU_SCOPE_PROCESS,
                                             thread ? toucher_tid.load() : 0));
    if (!p) {
      if (!failed++) ADD_FAILURE() << "create: " << p.error().message();
      continue;
    }
    ++created;
    std::this_thread::sleep_for(std::chrono::microseconds(i % 7 * 100));
  }
  stop = true;
  toucher.join();
  udp.join();
  EXPECT_EQ(failed, 0);
  EXPECT_GE(created, 20) << "in 15 s";
}

}  // namespace
}  // namespace tprof::test
