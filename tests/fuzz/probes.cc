// tprof_fuzz: execution breakpoints (OpProbes): arm64's uprobes, and, at
// kernel addresses, kprobes.
//
// OpProbes plays a scene like OpPmuNetlink's, with programs whose counters
// are execution breakpoints: at the fuzzer's own text and at libc functions
// the burner calls (file mappings: uprobes on arm64, debug registers on
// x86), at addresses that are no instruction or in no file mapping (an
// anonymous executable page the burner runs, a data word, the vDSO, an
// unmapped page: on arm64 those only count, so a threshold, rule, range or
// arming there is EOPNOTSUPP), and as root at kernel functions the burner
// drives (from /proc/kallsyms). Thresholds, rules, secondary counters and
// ranges vary; programs and sockets close while hits fire; children forked
// after a program (in its scope) hit the same code and exit. Processes that
// map the same binary but are outside every program's scope ("strangers":
// forked before the programs, then orphaned, and running the same code)
// must never show up in an event of this scene's thread or process programs
// (a uprobe belongs to the file, not to the process). Unprivileged, the
// root parent also runs a program with a breakpoint in the same binary.
// A program on the calling thread with one breakpoint counts the calls of
// its function exactly.
#include "pmu_netlink.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <linux/tprof.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace tprof_fuzz::core {
namespace {

extern "C" __attribute__((noinline)) void tprof_fuzz_probe_callee() { asm volatile("" ::: "memory"); }

enum class ProbeAt { kSpin, kLibc, kMidInsn, kAnonExec, kData, kVdso, kUnmapped, kKernel };

struct ProbeSites {
  u64 libc[3] = {};                  // getppid, sched_yield, munmap (what the burner calls)
  void (*anon_ret)() = nullptr;      // a `ret` in an anonymous executable page
  u64 vdso = 0;
  std::vector<u64> kernel;           // functions the burner drives (root: kallsyms)
};

const ProbeSites& Sites() {
  static const ProbeSites s = [] {
    ProbeSites p;
    const char* names[] = {"getppid", "sched_yield", "munmap"};
    for (int i = 0; i < 3; ++i) p.libc[i] = u64(uintptr_t(::dlsym(RTLD_DEFAULT, names[i])));
    void* m = ::mmap(nullptr, size_t(kPage), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
#if defined(__aarch64__)
      const uint32_t ret = 0xd65f03c0;
#else
      const uint8_t ret = 0xc3;
#endif
      std::memcpy(m, &ret, sizeof(ret));
      __builtin___clear_cache(static_cast<char*>(m), static_cast<char*>(m) + sizeof(ret));
      if (::mprotect(m, size_t(kPage), PROT_READ | PROT_EXEC) == 0) p.anon_ret = reinterpret_cast<void (*)()>(m);
    }
    p.vdso = u64(::getauxval(AT_SYSINFO_EHDR));
    if (::geteuid() == 0) {
#if defined(__aarch64__)
      const std::set<std::string> want = {"__arm64_sys_getppid", "__arm64_sys_sched_yield", "__arm64_sys_munmap",
                                          "handle_mm_fault"};
#else
      const std::set<std::string> want = {"__x64_sys_getppid", "__x64_sys_sched_yield", "__x64_sys_munmap",
                                          "handle_mm_fault"};
#endif
      if (FILE* f = std::fopen("/proc/kallsyms", "r")) {
        char line[512];
        while (std::fgets(line, sizeof(line), f)) {
          unsigned long long a;
          char type;
          char name[256];
          if (std::sscanf(line, "%llx %c %255s", &a, &type, name) == 3 && a && want.count(name))
            p.kernel.push_back(a);
        }
        std::fclose(f);
      }
    }
    return p;
  }();
  return s;
}

// What the burner and the children run: every breakpoint site that exists.
void ProbeWork(int n) {
  const ProbeSites& s = Sites();
  for (int i = 0; i < n; ++i) {
    tprof_fuzz_spin(2);
    tprof_fuzz_probe_callee();
    (void)::getppid();
    ::sched_yield();
    if (s.anon_ret) s.anon_ret();
    g_pmu_word = g_pmu_word + 1;
  }
  void* m = ::mmap(nullptr, size_t(kPage) * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m != MAP_FAILED) {
    static_cast<volatile char*>(m)[0] = 1;
    ::munmap(m, size_t(kPage) * 2);
  }
}

struct ProbeBurner {
  std::atomic<bool> stop{false};
  std::atomic<uint32_t> tid{0};
  std::thread t;
  explicit ProbeBurner(bool relentless) {
    t = std::thread([this, relentless] {
      tid = Gettid();
      while (!stop.load()) {
        ProbeWork(2);
        if (!relentless) std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    });
    while (!tid.load()) std::this_thread::yield();
  }
  ~ProbeBurner() {
    stop = true;
    t.join();
  }
};

// A process that maps this binary and runs the probed code but is in no
// program's scope: forked before them and orphaned at once (its parent
// chain no longer reaches this process). It runs until `stop` closes.
struct Stranger {
  uint32_t pid = 0;
  int pidfd = -1;
  int stop_wr = -1;
};

// Whether fd becomes readable (or hangs up) within ms; EINTR retried.
bool WaitReadable(int fd, int ms) {
  const u64 until = NowNs() + u64(ms) * 1'000'000ULL;
  for (;;) {
    pollfd pf{fd, POLLIN, 0};
    const u64 now = NowNs();
    if (now >= until) return false;
    int n = ::poll(&pf, 1, int((until - now) / 1'000'000ULL) + 1);
    if (n == 1) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

// Closes every descriptor from 3 up but these (a forked child's).
void CloseAllBut(std::initializer_list<int> keep) {
  std::vector<int> k(keep);
  std::sort(k.begin(), k.end());
  unsigned from = 3;
  for (int fd : k) {
    if (unsigned(fd) > from) ::close_range(from, unsigned(fd) - 1, 0);
    if (unsigned(fd) + 1 > from) from = unsigned(fd) + 1;
  }
  ::close_range(from, ~0U, 0);
}

// The middle process tells the grandchild's pid and waits (a byte on
// hold) until it is registered as this process's own, so that none of the
// grandchild's events precedes that while it is no descendant any more;
// then it exits, and the grandchild, orphaned, waits for one byte (go) on
// `stop`. Bytes, not end of file: other workers' forks copy the pipes.
// If the pid never arrives (a loaded TCG guest can take seconds to
// schedule the middle process), hold says so and the middle process kills
// and reaps the grandchild before it exits: no orphan this process does
// not know may run (a session of this process follows it: seed 1 saw a
// sample of such an orphan).
std::optional<Stranger> StartStranger() {
  int stop[2], ready[2], hold[2];
  if (::pipe2(stop, O_CLOEXEC)) return std::nullopt;
  if (::pipe2(ready, O_CLOEXEC)) {
    ::close(stop[0]);
    ::close(stop[1]);
    return std::nullopt;
  }
  if (::pipe2(hold, O_CLOEXEC)) {
    for (int fd : {stop[0], stop[1], ready[0], ready[1]}) ::close(fd);
    return std::nullopt;
  }
  pid_t mid = ForkOwn();
  if (mid > 0) AddOwnPid(uint32_t(mid));  // an unprivileged session of this process follows it
  if (mid == 0) {
    g_in_child = true;
    // Nothing of the device (sessions, programs) stays held meanwhile.
    CloseAllBut({stop[0], ready[1], hold[0]});
    pid_t gc = ForkOwn();
    if (gc != 0) {
      uint32_t p = gc > 0 ? uint32_t(gc) : 0;
      (void)!::write(ready[1], &p, sizeof(p));
      char c = 0;
      ssize_t got;
      while ((got = ::read(hold[0], &c, 1)) < 0 && errno == EINTR) {
      }
      if (gc > 0 && !(got == 1 && c == 'r')) {  // not registered: it must not outlive this process
        ::kill(gc, SIGKILL);
        while (::waitpid(gc, nullptr, 0) < 0 && errno == EINTR) {
        }
      }
      ::_exit(0);
    }
    // The grandchild.
    ::close(ready[1]);
    ::close(hold[0]);
    while (::getppid() == mid) ::sched_yield();  // orphaned: out of every scope
    // One byte: go; end of file: never mind.
    char go;
    if (::read(stop[0], &go, 1) != 1) ::_exit(0);
    const u64 until = NowNs() + 10'000'000'000ULL;
    for (;;) {
      pollfd pf{stop[0], POLLIN, 0};
      if (::poll(&pf, 1, 0) != 0 || NowNs() > until) ::_exit(0);
      ProbeWork(4);
      ::usleep(200);
    }
  }
  ::close(stop[0]);
  ::close(ready[1]);
  ::close(hold[0]);
  std::optional<Stranger> s;
  if (mid > 0) {
    uint32_t pid = 0;
    if (WaitReadable(ready[0], 30000) && ::read(ready[0], &pid, sizeof(pid)) == ssize_t(sizeof(pid)) && pid) {
      // The unprivileged worker's own process: another scene's process
      // program created before the fork counts it (perf's inherit).
      AddSharedPid(pid);
      s.emplace();
      s->pid = pid;
      s->stop_wr = stop[1];
      s->pidfd = int(::syscall(SYS_pidfd_open, pid_t(pid), 0));
    }
    if (!s) Count("stranger not started");
    (void)!::write(hold[1], s ? "r" : "k", 1);
    ::close(hold[1]);
    int st;
    while (::waitpid(mid, &st, 0) < 0 && errno == EINTR) {
    }
    if (s) (void)!::write(stop[1], "g", 1);
  } else {
    ::close(hold[1]);
  }
  ::close(ready[0]);
  if (!s) ::close(stop[1]);
  return s;
}

// Ends a stranger and waits until it is gone (it inherited no descriptor of
// the device, but it holds this binary's mapping while uprobes come and go).
void StopStranger(Stranger& s) {
  ::close(s.stop_wr);
  if (s.pidfd >= 0) {
    (void)::syscall(SYS_pidfd_send_signal, s.pidfd, SIGKILL, nullptr, 0);
    pollfd pf{s.pidfd, POLLIN, 0};
    if (::poll(&pf, 1, 15000) != 1) VIOLATION("stranger %u did not exit within 15 s", s.pid);
    ::close(s.pidfd);
  }
}

u64 ProbeAddress(Rng& r, ProbeAt at) {
  const ProbeSites& s = Sites();
  switch (at) {
    case ProbeAt::kSpin:
      return r.OneIn(2) ? u64(uintptr_t(&tprof_fuzz_spin)) : u64(uintptr_t(&tprof_fuzz_probe_callee));
    case ProbeAt::kLibc: return s.libc[r.Below(3)];
    case ProbeAt::kMidInsn: return u64(uintptr_t(&tprof_fuzz_spin)) + 1 + r.Below(3);
    case ProbeAt::kAnonExec: return u64(uintptr_t(s.anon_ret));
    case ProbeAt::kData: return u64(uintptr_t(&g_pmu_word));
    case ProbeAt::kVdso: return s.vdso;
    case ProbeAt::kUnmapped: return 0x10000ULL + u64(kPage) * r.Below(16);
    case ProbeAt::kKernel:
      if (!s.kernel.empty()) return s.kernel[r.Below(s.kernel.size())] + (r.OneIn(8) ? 2 : 0);
      return 0xffff800008000000ULL;
  }
  return 0;
}

bool IsArm64() {
#if defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

// Creates one breakpoint program in the scene and checks the outcome
// against what the uapi header promises for its shape.
void ProbeCreateProgram(Rng& r, NlScene& sc, int dev, uint32_t burner_tid, const std::vector<Stranger>& strangers) {
  tprof_pmu_program in{};
  const u64 shape = r.Below(10);
  bool foreign = false;
  switch (shape) {
    case 0: case 1: case 2: in.scope = TPROF_PMU_SCOPE_THREAD; in.pid = burner_tid; break;
    case 3: in.scope = TPROF_PMU_SCOPE_THREAD; in.pid = 0; break;
    case 4: case 5: case 6: in.scope = TPROF_PMU_SCOPE_PROCESS; in.pid = 0; break;
    case 7: in.scope = TPROF_PMU_SCOPE_CPUS; break;
    default:  // another process mapping the same binary: a stranger, or the root parent
      in.scope = TPROF_PMU_SCOPE_PROCESS;
      if (!strangers.empty() && (r.OneIn(2) || !g_unpriv)) in.pid = strangers[r.Below(strangers.size())].pid;
      else if (g_unpriv) in.pid = uint32_t(::getppid());
      foreign = in.pid != 0;  // else this process (root's parent is a shell)
      break;
  }
  in.nr_counters = 1 + uint32_t(r.Below(4));
  const bool clean = r.OneIn(2);
  bool kernel = false, needs_hits = in.scope == TPROF_PMU_SCOPE_CPUS, counts_only_site = false, odd = false;
  std::vector<bool> hits(in.nr_counters, false), counts_only(in.nr_counters, false);
  for (uint32_t i = 0; i < in.nr_counters; ++i) {
    tprof_pmu_counter& k = in.counters[i];
    if (i > 0 && r.OneIn(4)) {  // a software counter beside them, for rules
      k.kind = TPROF_PMU_EV_SOFTWARE;
      k.config = 2;  // page faults
      continue;
    }
    static const ProbeAt kinds[] = {ProbeAt::kSpin, ProbeAt::kSpin,     ProbeAt::kSpin, ProbeAt::kLibc,
                                    ProbeAt::kLibc, ProbeAt::kMidInsn,  ProbeAt::kAnonExec,
                                    ProbeAt::kData, ProbeAt::kVdso,     ProbeAt::kUnmapped, ProbeAt::kKernel};
    // Half the programs use only sites that can see every hit (so that
    // most are created and fire); the others any site.
    ProbeAt at = clean ? (r.OneIn(3) ? ProbeAt::kLibc : ProbeAt::kSpin) : kinds[r.Below(sizeof(kinds) / sizeof(kinds[0]))];
    if (in.scope == TPROF_PMU_SCOPE_CPUS && r.OneIn(2)) at = ProbeAt::kKernel;
    k.kind = TPROF_PMU_EV_BREAKPOINT;
    k.addr = ProbeAddress(r, at);
    kernel |= at == ProbeAt::kKernel;
    counts_only[i] = at == ProbeAt::kAnonExec || at == ProbeAt::kData || at == ProbeAt::kVdso ||
                     at == ProbeAt::kUnmapped;
    counts_only_site |= counts_only[i];
    odd |= at == ProbeAt::kMidInsn || at == ProbeAt::kKernel || at == ProbeAt::kLibc;
    if (r.OneIn(3)) {
      k.threshold = 1 + r.Below(3);
      k.threshold_every = r.OneIn(4) ? 0 : 1 + r.Below(8);
      hits[i] = true;
    }
    if (r.OneIn(5)) {  // a range with the breakpoint inside or outside it
      k.flags |= TPROF_PMU_CTR_RANGE;
      k.range_start = k.addr + (r.OneIn(2) ? 0 : 4);
      k.range_end = k.range_start + 4 + r.Below(64);
      if (r.OneIn(3)) k.nr_subranges = 2;
      hits[i] = true;
    }
    if (r.OneIn(8)) k.flags |= TPROF_PMU_CTR_USER_ONLY;
  }
  if (r.OneIn(2)) {  // a rule over one or two counters, maybe arming a later one
    in.nr_rules = 1;
    tprof_pmu_rule& rule = in.rules[0];
    rule.nr_terms = 1 + uint32_t(r.Below(std::min<u64>(2, in.nr_counters)));
    rule.op = TPROF_PMU_OP_GE;
    rule.rearm = r.OneIn(2) ? TPROF_PMU_REARM_ON_FALSE : 0;
    rule.constant = int64_t(r.Below(20));
    for (uint32_t t = 0; t < rule.nr_terms; ++t) {
      rule.terms[t].counter = t;
      rule.terms[t].multiplier = 1;
      hits[t] = true;
    }
    if (in.nr_counters > rule.nr_terms && r.OneIn(2)) {
      in.counters[in.nr_counters - 1].armed_by = 1;
      hits[in.nr_counters - 1] = true;
    }
  }
  bool counts_only_needs_hits = false;
  for (uint32_t i = 0; i < in.nr_counters; ++i)
    if (counts_only[i] && (hits[i] || needs_hits)) counts_only_needs_hits = true;

  NlProg p;
  p.id = sc.next_id++;
  p.scope = in.scope;
  p.nr_counters = in.nr_counters;
  p.nr_rules = in.nr_rules;
  p.target_tid = in.scope == TPROF_PMU_SCOPE_THREAD ? (in.pid ? in.pid : Gettid()) : 0;
  p.single_producer = in.scope == TPROF_PMU_SCOPE_THREAD;
  p.own_process = in.scope != TPROF_PMU_SCOPE_CPUS && !foreign;
  std::lock_guard<std::mutex> l(g_prog_mu);
  int err = RawIoctl("PMU_CREATE", dev, TPROF_IOC_PMU_CREATE, &in);
  Count(std::string("probe program create ") + (kernel ? "kernel " : "") + ErrName(err));
  // A stranger is the same user's process: that may be counted.
  const bool root_parent = foreign && in.pid == uint32_t(::getppid());
  const bool refused = g_unpriv && (kernel || in.scope == TPROF_PMU_SCOPE_CPUS || root_parent);
  if (err == 0 && refused)
    VIOLATION("PMU_CREATE succeeded unprivileged with %s", kernel ? "a kernel breakpoint"
                                                          : root_parent ? "the root parent's pid" : "scope CPUS");
  if (err && err != EINVAL && err != EPERM && err != EACCES && err != ESRCH && err != ENOENT && err != EOPNOTSUPP &&
      err != ENOSPC && err != ENOMEM && err != E2BIG && err != EMFILE && err != kBreakpointBusy)
    VIOLATION("PMU_CREATE (breakpoints) failed with %s, not documented", ErrName(err).c_str());
  // On arm64 a breakpoint in no file mapping is a debug register; since
  // ABI 1.11 one that needs hits there (threshold, rule, range, arming,
  // scope CPUS) gets a stepper and is accepted (or ENOSPC): counted only.
  if (IsArm64() && counts_only_needs_hits)
    Count(std::string("probe program, debug register per hit ") + ErrName(err));
  // As root, breakpoints on this binary's own functions in this process:
  // nothing may refuse them but resources (x86's four debug registers) and,
  // on arm64, another worker's every-CPU breakpoint there (EBUSY).
  if (!g_unpriv && !kernel && !odd && !counts_only_site && !foreign && in.scope != TPROF_PMU_SCOPE_CPUS && err &&
      err != ENOSPC && err != ENOMEM && err != EMFILE && err != ESRCH && err != kBreakpointBusy)
    VIOLATION("PMU_CREATE of breakpoints at this binary's functions refused: %s", ErrName(err).c_str());
  if (err) return;
  p.fd = in.fd;
  g_prog_fds[p.fd] = p.stolen;
  sc.progs.push_back(std::move(p));
}

// A thread program with one breakpoint counts the calls of its function
// exactly (uprobe or debug register); inside a range that holds the
// breakpoint too, and not at all in one that does not.
void ProbeExactCount(Rng& r, int dev) {
  tprof_pmu_program in{};
  in.scope = TPROF_PMU_SCOPE_THREAD;
  in.nr_counters = 1;
  tprof_pmu_counter& k = in.counters[0];
  k.kind = TPROF_PMU_EV_BREAKPOINT;
  const bool libc = r.OneIn(3) && Sites().libc[0];
  k.addr = libc ? Sites().libc[0] : u64(uintptr_t(&tprof_fuzz_probe_callee));
  const int range = int(r.Below(3));  // 0: none, 1: holds it, 2: misses it
  if (range) {
    k.flags = TPROF_PMU_CTR_RANGE;
    k.range_start = k.addr + (range == 1 ? 0 : 4);
    k.range_end = k.range_start + 4 + r.Below(60);
  }
  if (r.OneIn(3)) k.flags |= TPROF_PMU_CTR_USER_ONLY;
  int err = RawIoctl("PMU_CREATE", dev, TPROF_IOC_PMU_CREATE, &in);
  Count(std::string("probe exact count create ") + (libc ? "libc " : "") + ErrName(err));
  if (err) {
    // Unprivileged at kernel.perf_event_paranoid 3, EACCES; x86 may run
    // out of debug registers; a libc first instruction may be one a uprobe
    // cannot step over (EOPNOTSUPP); on arm64 another worker's every-CPU
    // breakpoint may be there (EBUSY). Anything else is wrong.
    if (!(err == EACCES && g_unpriv && PerfParanoid() > 2) && err != ENOSPC && err != ENOMEM && err != EMFILE &&
        err != kBreakpointBusy &&
        !(libc && err == EOPNOTSUPP))
      VIOLATION("PMU_CREATE of a breakpoint on the calling thread (%s, range %d): %s", libc ? "libc" : "own text",
                range, ErrName(err).c_str());
    return;
  }
  const int n = 1 + int(r.Below(40));
  for (int i = 0; i < n; ++i) {
    if (libc) (void)::getppid();
    else tprof_fuzz_probe_callee();
  }
  tprof_pmu_values v{};
  if (::ioctl(in.fd, TPROF_IOC_PMU_READ, &v) != 0) {
    VIOLATION("PMU_READ: %s", ErrName(errno).c_str());
  } else {
    const u64 want = range == 2 ? 0 : u64(n);
    if (v.values[0] != want)
      VIOLATION("breakpoint at %s (range %d) counted %llu of %d calls, want %llu", libc ? "getppid" : "own function",
                range, v.values[0], n, want);
    else
      Count("probe exact counts");
  }
  ::close(in.fd);
}

// A child in the programs' scope, and maybe a grandchild (on arm64 in a
// process program's scope through its parent chain): they hit the same
// code, then exit. The grandchild starts once the worker knows its pid
// (the unprivileged checks need it).
void ProbeScopedChild(Rng& r) {
  const int n = 1 + int(r.Below(20));
  const bool grandchild = r.OneIn(2);
  int up[2], go[2];
  if (::pipe2(up, O_CLOEXEC)) return;
  if (::pipe2(go, O_CLOEXEC)) {
    ::close(up[0]);
    ::close(up[1]);
    return;
  }
  pid_t pid = ForkOwn();
  if (pid == 0) {
    g_in_child = true;
    ::close(up[0]);
    ::close(go[1]);
    ProbeWork(n);
    if (grandchild) {
      pid_t g = ForkOwn();
      if (g == 0) {
        char c;
        if (::read(go[0], &c, 1) == 1 && c == 'g') ProbeWork(n);
        ::_exit(0);
      }
      uint32_t gp = g > 0 ? uint32_t(g) : 0;
      (void)!::write(up[1], &gp, sizeof(gp));
      if (g > 0) ::waitpid(g, nullptr, 0);
    }
    ::_exit(0);
  }
  ::close(up[1]);
  ::close(go[0]);
  if (pid > 0) {
    AddOwnPid(uint32_t(pid));
    uint32_t gp = 0;
    bool go_on = false;
    if (grandchild && WaitReadable(up[0], 30000) && ::read(up[0], &gp, sizeof(gp)) == ssize_t(sizeof(gp)) && gp) {
      AddOwnPid(gp);
      go_on = true;
    }
    // A byte either way: other workers' forks may hold copies of go[1].
    if (grandchild) (void)!::write(go[1], go_on ? "g" : "n", 1);
  }
  ::close(go[1]);
  ::close(up[0]);
  if (pid < 0) return;
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  Count("probe scoped children");
}
}  // namespace

void OpProbes(Worker& w) {
  t_op = "probes";
  Rng& r = w.rng;
  int dev = OpenDevice();
  if (dev < 0) return;
  (void)Sites();  // before any fork: its first call reads /proc/kallsyms
  if (r.OneIn(2)) ProbeExactCount(r, dev);
  NlScene sc;
  const int family = NlFamily();
  if (family <= 0) {
    if (family == 0) VIOLATION("generic netlink family %s not found while the module is loaded", TPROF_PMU_GENL_NAME);
    ::close(dev);
    return;
  }
  sc.family = uint16_t(family);
  // Strangers first: forked before every program of the scene.
  std::vector<Stranger> strangers;
  for (u64 i = r.Below(3); i > 0; --i)
    if (auto s = StartStranger()) {
      strangers.push_back(*s);
      sc.strangers.insert(s->pid);
    }
  std::optional<ProbeBurner> burner;
  burner.emplace(r.OneIn(3));
  const uint32_t btid = burner->tid.load();
  if (NlOpenSocket(r, sc, r.OneIn(2))) {
    for (u64 i = 1 + r.Below(3); i > 0; --i) ProbeCreateProgram(r, sc, dev, btid, strangers);
    const int steps = 6 + int(r.Below(16));
    for (int step = 0; step < steps; ++step) {
      NlSock* s = nullptr;
      for (NlSock& o : sc.socks)
        if (o.fd >= 0) s = &o;
      if (!s) {
        if (!NlOpenSocket(r, sc)) break;
        continue;
      }
      std::vector<NlProg*> live;
      for (NlProg& p : sc.progs)
        if (p.fd >= 0) live.push_back(&p);
      NlProg* p = live.empty() ? nullptr : live[r.Below(live.size())];
      switch (r.Below(9)) {
        case 0: case 1:
          if (p) (void)NlSubscribe(sc, *s, p->fd, p->id, "probe subscribe");
          break;
        case 2: case 3: NlPump(sc, *s, 0, nullptr, int(r.Below(20))); break;
        case 4: ProbeWork(1 + int(r.Below(10))); break;  // this thread hits too (process programs)
        case 5: ProbeScopedChild(r); break;
        case 6:  // a program closes while the burner hits it
          if (p) {
            if (r.OneIn(2)) {
              for (NlSock& o : sc.socks)
                if (o.fd >= 0) NlPump(sc, o, 0, nullptr);
              NlCheckBooks(sc, *p);
            }
            NlCloseProgram(*p);
            Count("probe program closed");
            if (r.OneIn(2)) ProbeCreateProgram(r, sc, dev, btid, strangers);
          }
          break;
        case 7:  // the monitor closes with events in flight
          ::close(s->fd);
          s->fd = -1;
          if (r.OneIn(2)) NlOpenSocket(r, sc);
          break;
        default:  // the burner's thread exits (a thread program's target is gone) and another starts
          if (r.OneIn(3)) {
            burner.reset();
            burner.emplace(r.OneIn(3));
          } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(r.Below(20)));
          }
          break;
      }
    }
  }
  for (NlSock& s : sc.socks)
    if (s.fd >= 0) NlPump(sc, s, 0, nullptr);
  for (NlProg& p : sc.progs)
    if (p.fd >= 0) NlCloseProgram(p);
  for (NlSock& s : sc.socks)
    if (s.fd >= 0) {
      NlPump(sc, s, 0, nullptr);
      ::close(s.fd);
      s.fd = -1;
    }
  burner.reset();
  for (Stranger& s : strangers) StopStranger(s);
  ::close(dev);
  Count("probe scenes");
}

}  // namespace tprof_fuzz::core
