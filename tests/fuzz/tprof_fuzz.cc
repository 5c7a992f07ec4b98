// tprof_fuzz: a seeded fuzzer for /dev/tprof, run inside a tprof-vm guest
// (the debug kernel: KASAN, UBSAN, lockdep, kmemleak) like the integration
// tests.
//
//   tprof_fuzz --seed N --seconds S [--threads T] [--unprivileged]
//              [--no-module-cycles] [--verbose]
//
// It prints the seed first, so a failing run can be repeated (each worker
// thread draws from its own generator seeded from N; the interleaving of
// the threads is the kernel's, so a repeat reproduces the same operations,
// not necessarily the same schedule). Exit status: 0 when no invariant was
// violated, 1 otherwise, 2 for bad usage.
//
// Worker threads pick random operations: every ioctl of uapi/linux/tprof.h
// through a table (kIoctls: adding an ioctl is one entry) with valid,
// boundary and broken arguments (wrong size or direction in the command,
// nonzero reserved fields, unknown flags, NULL/unmapped/read-only/straddling/
// kernel-half/non-canonical pointers, embedded pointers to small, unmapped
// and read-only buffers); opens, dups and closes of the device; sampling
// sessions started, mapped, read, released, stopped and closed in any order;
// mmaps, mprotects, mremaps and munmaps of the buffers (offset 0) and of the
// self page (TPROF_SELF_PAGE_OFFSET) at random offsets, sizes and prots;
// short-lived threads that map their self page and exit while others drain;
// forked children that use inherited descriptors and mappings and exit;
// metrics turned on and off; PMU programs that fire on every page fault or
// visit of a burner thread, with raw generic netlink sockets subscribing
// (with their own, closed, foreign and non-program descriptors), sending
// malformed messages, filling their receive buffers and closing while
// events fire (OpPmuNetlink); a closing monitor's port id taken at once by
// another socket (OpPortIdRace); programs of execution breakpoints in file
// mappings (arm64: uprobes), in none, at no instruction and (root) at kernel
// functions, beside "strangers" running the same binary outside every
// program's scope (OpProbes); a child that execs a setuid-root helper while
// the worker attaches to it every way it knows (OpExecRace), and a child
// in a user namespace of its own attaching to processes outside it and to
// its own (OpUserNamespace; both in scenes_exec.cc, through fuzz.h: its
// header lists what they check). One "accountant" at a time runs a whole session
// and checks its books. As root the main thread also checks that rmmod is
// refused while a descriptor is open and cycles insmod/rmmod (with random
// module parameters) while a fork storm runs, and takes CPUs other than 0
// offline and back online while the workers run. --unprivileged runs the
// workers as uid/gid 65534 without capabilities (a root parent keeps
// metrics on, runs system-wide sessions, burns CPU and runs a PMU program
// on its own page faults whose monitor socket it closes and reopens,
// meanwhile).
//
// Invariants (each violation prints "VIOLATION: ..." and fails the run):
//   - an ioctl returns 0 or -1 with an errno from its documented set (the
//     uapi header: per ioctl, plus EFAULT/EINVAL for every ioctl and
//     ENOMEM where it allocates); unknown numbers ENOTTY; a known number
//     with another size or direction EINVAL; never a positive value;
//   - an ioctl given a defect the header says must fail (nonzero reserved
//     field, unknown flag, unreadable input, unwritable output, kernel or
//     non-canonical pointer) does not succeed;
//   - outputs are consistent: reserved fields zero, counts within
//     capacities, nothing written past a struct or an embedded array
//     (canaries), ids/sizes/versions in range, pid filters respected;
//   - privileged-only operations fail for the unprivileged worker
//     (METRICS_ENABLE/DISABLE, system-wide sampling and drain, kernel
//     windows, other users' threads and processes);
//   - unprivileged outputs carry no kernel-pointer-looking value
//     (>= 0xffff800000000000 in any u64 field; address-space ids, which are
//     hashes, excepted) and no foreign data (rows, records, windows of pids
//     that are not the worker's own process tree); its kernel samples have
//     ip = caller = 0 and TPROF_SAMPLE_HIDDEN;
//   - records are well formed (size, alignment, type, cpu, within used);
//   - a sampling session's books: per CPU, SAMPLE records delivered +
//     lost_samples == samples_taken after stop; LOST records never claim
//     more; POLLHUP once stopped and drained; the status totals match;
//     the buffer mapping is read-only and its contents do not change after
//     the session ended; reading it faults (SIGBUS, caught) only in the
//     halves of a CPU that has none, never in the control area or for a
//     CPU whose ctl says online;
//   - the self page belongs to the caller (tid), is read-only, is not
//     inherited by fork, its odometer does not run backwards;
//   - rmmod is refused while a descriptor is open, succeeds once none is,
//     and insmod succeeds; a CPU taken offline comes back online, and no
//     thread (workers or the hotplugging main thread) is stuck for 120 s;
//   - the PMU family: a refusal is one of the uapi header's errnos (the
//     handler's, and generic netlink's for malformed messages); a request
//     is answered unless the socket overran; an event reaches only a socket
//     that subscribed, an unprivileged one only events of its own process
//     tree and no kernel address; per program and socket seq increases and,
//     for a program on one thread with one monitor ever, delivered + lost
//     >= seq and PMU_READ's sent >= what the monitor read; a thread or
//     process program of this process never names a stranger's pid or a
//     process outside this tree; a thread breakpoint counts its function's
//     calls exactly; on arm64 a breakpoint in no file mapping that needs
//     every hit is refused; the root
//     parent's descriptors cannot be opened through /proc unprivileged;
//   - the setuid helper exits 0 (no SIGTRAP/SIGILL/SIGSEGV, whatever was
//     attached to it when it exec'd); nothing the unprivileged worker
//     attached to it before its exec (nor a PMU program root attached
//     then) counts, samples, records or reads it afterwards; from a user namespace of its own the unprivileged worker
//     attaches to no process outside it (EACCES), least of all a same-uid
//     one with a capability, and to its own processes as without it;
//   - at the end, with every descriptor closed, no session is left.
// Kernel reports (WARNING, BUG, KASAN, UBSAN, lockdep, hung tasks, soft
// lockups, RCU stalls, kmemleak) are caught by tools/vm/scan-kernel-log
// around this program (tools/tprof-vm --kmemleak).
//
// Its files (tests/fuzz/): tprof_fuzz.cc, this one: the workers, module
// cycles, CPU hotplug, main and the report. core.h: what the files share;
// core.cc: basics, statistics, the process tree the unprivileged worker
// owns, hostile pointers, the descriptors shared between workers, and the
// core's side of fuzz.h. ioctls.cc: one ioctl, checked (kIoctls, its
// fillers and checkers, FuzzIoctl). records.cc: records and a session's
// books. ops.cc: the operations (the accountant among them). pmu_netlink.cc
// (and pmu_netlink.h): PMU programs and their generic netlink family
// (OpPmuNetlink, OpPortIdRace, RootPmuRound). probes.cc: execution
// breakpoints (OpProbes). scenes_exec.cc, through fuzz.h: the credential
// scenes (OpExecRace, OpUserNamespace).
#include "core.h"
#include "fuzz.h"

#include <linux/tprof.h>
#include <execinfo.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tprof_fuzz::core {
namespace {

// ---- workers, pause/resume (module cycles) ---------------------------------------------

std::mutex g_pause_mu;
std::condition_variable g_pause_cv;
bool g_pause = false;
int g_paused = 0;
std::atomic<u64> g_ops{0};
std::vector<std::atomic<u64>>* g_op_start = nullptr;  // per worker: start of the current op (ns)

void ReleaseThreadResources(Worker& w) {
  for (const Mapping& m : w.self_pages) ::munmap(m.addr, m.len);
  w.self_pages.clear();
}

// The scenes of scenes_exec.cc (fuzz.h): a setuid helper's exec race, user namespaces.
void OpExecRace(Worker& w) { tprof_fuzz::OpExecRace(w.rng.Next()); }
void OpUserNamespace(Worker& w) { tprof_fuzz::OpUserNamespace(w.rng.Next()); }

void WorkerMain(int index) {
  Worker w(index, g_opt.seed * 1000 + u64(index) + 1);
  t_scratch = new Scratch;
  struct Op {
    void (*fn)(Worker&);
    int weight;
  };
  static const Op ops[] = {{OpIoctl, 30}, {OpFds, 10}, {OpSession, 12}, {OpMmap, 8},
                           {OpUnmap, 5},  {OpSelfPage, 6}, {OpThread, 4}, {OpDrain, 6},
                           {OpFork, 3},   {OpPoll, 3},  {OpMetrics, 2}, {OpAccountant, 3},
                           {OpPmuNetlink, 6}, {OpPortIdRace, 2}, {OpProbes, 5},
                           {OpExecRace, 3},   {OpUserNamespace, 2}};
  int total = 0;
  for (const Op& o : ops) total += o.weight;
  while (!g_stop.load()) {
    {
      std::unique_lock<std::mutex> l(g_pause_mu);
      if (g_pause) {
        ReleaseThreadResources(w);
        ++g_paused;
        g_pause_cv.notify_all();
        g_pause_cv.wait(l, [] { return !g_pause; });
        --g_paused;
        continue;
      }
    }
    int pick = int(w.rng.Below(u64(total)));
    const Op* op = ops;
    while (pick >= op->weight) pick -= (op++)->weight;
    (*g_op_start)[size_t(index)] = NowNs();
    op->fn(w);
    (*g_op_start)[size_t(index)] = 0;
    g_ops++;
  }
  ReleaseThreadResources(w);
}

// Pauses every worker with nothing of the device held.
void PauseWorkers() {
  std::unique_lock<std::mutex> l(g_pause_mu);
  g_pause = true;
  g_pause_cv.wait(l, [] { return g_paused == g_opt.threads; });
  {
    std::lock_guard<std::mutex> pl(g_pool_mu);
    g_pool.clear();
  }
  std::lock_guard<std::mutex> ml(g_maps_mu);
  for (const Mapping& m : g_maps) ::munmap(m.addr, m.len);
  g_maps.clear();
}
void ResumeWorkers() {
  std::lock_guard<std::mutex> l(g_pause_mu);
  g_pause = false;
  g_pause_cv.notify_all();
}

// ---- module cycles (root) --------------------------------------------------------------

std::string ModulePath() {
  const char* p = std::getenv("TPROF_MODULE_PATH");
  return p ? p : "";
}
int Rmmod() { return ::syscall(SYS_delete_module, "tprof", O_NONBLOCK) == 0 ? 0 : errno; }
int Insmod(const std::string& path, const std::string& params) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int ret = ::syscall(SYS_finit_module, fd, params.c_str(), 0) == 0 ? 0 : errno;
  ::close(fd);
  return ret;
}

// Children that fork, exec and exit as fast as they can, and threads that come and go.
std::atomic<bool> g_storm{false};
void ForkStorm() {
  while (g_storm.load()) {
    pid_t p = ::fork();
    if (p == 0) {
      if (::getpid() % 3 == 0) ::execl("/bin/true", "true", static_cast<char*>(nullptr));
      ::_exit(0);
    }
    if (p > 0) ::waitpid(p, nullptr, 0);
  }
}

bool RmmodUntilGone(const char* when) {
  int err = 0;
  for (int i = 0; i < 250; ++i) {
    err = Rmmod();
    if (err == 0 || err == ENOENT) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  VIOLATION("rmmod tprof %s, with no descriptor or mapping left: %s for 5 s", when, ErrName(err).c_str());
  return false;
}

// One module cycle: workers paused, anchor closed, insmod/rmmod under a fork storm.
void ModuleCycle(Rng& r, int* anchor) {
  t_op = "module cycle";
  const std::string path = ModulePath();
  int err = Rmmod();
  Count("rmmod with a descriptor open " + ErrName(err));
  if (err == 0) {
    VIOLATION("rmmod tprof succeeded while a descriptor of /dev/tprof was open");
    Insmod(path, "");
  } else if (err != EWOULDBLOCK && err != EBUSY) {
    VIOLATION("rmmod tprof with a descriptor open: %s (expected EWOULDBLOCK)", ErrName(err).c_str());
  }
  PauseWorkers();
  ::close(*anchor);
  *anchor = -1;
  g_storm = true;
  std::thread storm(ForkStorm);
  static const char* params[] = {"", "max_threads=64", "metrics=time,dispatches", "metrics=time max_threads=16",
                                 "metrics=time,dispatches,page-faults"};
  int cycles = 1 + int(r.Below(3));
  bool loaded = true;
  for (int i = 0; i < cycles; ++i) {
    if (!RmmodUntilGone("between cycles")) break;
    loaded = false;
    const char* p = params[r.Below(5)];
    err = Insmod(path, p);
    Count("insmod " + ErrName(err));
    if (err) {
      VIOLATION("insmod %s %s: %s", path.c_str(), p, ErrName(err).c_str());
      break;
    }
    loaded = true;
    int fd = OpenDevice();
    if (fd < 0) {
      VIOLATION("open after insmod: %s", ErrName(errno).c_str());
      continue;
    }
    tprof_self_read sr;
    err = RawIoctl("READ_SELF", fd, TPROF_IOC_READ_SELF, &sr);
    if (err && err != ENODATA && err != ESRCH) VIOLATION("READ_SELF after insmod %s: %s", p, ErrName(err).c_str());
    tprof_sampling_config cfg{};
    cfg.pid = TPROF_PID_ALL;
    cfg.frequency_hz = 5000;
    if (r.OneIn(2) && RawIoctl("SAMPLING_START", fd, TPROF_IOC_SAMPLING_START, &cfg) == 0) {
      err = Rmmod();
      if (err == 0) VIOLATION("rmmod succeeded under a running session");
      Burn(5'000'000);
    }
    ::close(fd);
  }
  if (!loaded) {
    err = Insmod(path, "");
    if (err) VIOLATION("insmod %s: %s", path.c_str(), ErrName(err).c_str());
  }
  g_storm = false;
  storm.join();
  *anchor = OpenDevice();
  if (*anchor < 0) VIOLATION("open after the module cycles: %s", ErrName(errno).c_str());
  for (int i = 0; i < 4; ++i) {
    int fd = OpenDevice();
    if (fd >= 0) PoolAdd(std::make_shared<Fd>(fd));
  }
  Count("module cycles", u64(cycles));
  ResumeWorkers();
}

// ---- CPU hotplug (root) ------------------------------------------------------------------

bool WriteSysfs(const std::string& path, const char* value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, value, std::strlen(value)) == ssize_t(std::strlen(value));
  ::close(fd);
  return ok;
}

// A system-wide session started while `cpu` is offline: its control area and
// CPU 0's halves read, `cpu`'s halves fault (none are allocated); once the
// CPU is back (online_again runs that) it gets halves, root being exempt
// from the memory limit, and its ctl says online. Skipped when another
// session runs.
struct OfflineCpuSession {
  int fd = -1;
  char* map = nullptr;
  tprof_sampling_config cfg{};
  int cpu;

  explicit OfflineCpuSession(int c) : cpu(c) {
    fd = OpenDevice();
    if (fd < 0) return;
    cfg.pid = TPROF_PID_ALL;
    cfg.frequency_hz = 1000;
    int err = RawIoctl("SAMPLING_START", fd, TPROF_IOC_SAMPLING_START, &cfg);
    Count("offline-cpu session start " + ErrName(err));
    if (err) return;
    void* p = ::mmap(nullptr, cfg.map_bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      VIOLATION("mmap of a new session's buffers: %s", ErrName(errno).c_str());
      return;
    }
    map = static_cast<char*>(p);
    for (u64 o = 0; o < cfg.ctl_bytes; o += u64(kPage))
      if (int sig = TouchCatching(map + o)) VIOLATION("%s reading the control area at 0x%llx", strsignal(sig), o);
    if (int sig = TouchCatching(Half(0, 0))) VIOLATION("%s reading cpu 0's first half", strsignal(sig));
    for (int h = 0; h < 2; ++h) {
      int sig = TouchCatching(Half(cpu, h));
      Count(std::string("offline cpu's half: ") + (sig ? strsignal(sig) : "read a page"));
      if (!sig) VIOLATION("cpu%d was offline at SAMPLING_START, yet its half %d reads", cpu, h);
    }
  }
  const char* Half(int c, int h) const { return map + cfg.ctl_bytes + (2 * u64(c) + u64(h)) * cfg.half_bytes_out; }
  void OnlineAgain() {
    if (!map) return;
    auto* ctl = reinterpret_cast<const tprof_buffer_ctl*>(map + size_t(cpu) * sizeof(tprof_buffer_ctl));
    const u64 deadline = NowNs() + 20'000'000'000ULL;  // the counter comes from a work item
    while (!__atomic_load_n(&ctl->online, __ATOMIC_ACQUIRE) && NowNs() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!__atomic_load_n(&ctl->online, __ATOMIC_ACQUIRE)) {
      // A root worker's SAMPLING_STOP_ANY may have detached the session
      // (then WINDOW_LIST on its descriptor fails): nothing to expect.
      tprof_window_list wl{};
      if (RawIoctl("WINDOW_LIST", fd, TPROF_IOC_WINDOW_LIST, &wl) == 0)
        VIOLATION("cpu%d back online, its ctl not after 20 s", cpu);
      else
        Count("offline-cpu session detached by another");
      return;
    }
    for (int h = 0; h < 2; ++h)
      if (int sig = TouchCatching(Half(cpu, h)))
        VIOLATION("%s reading cpu%d's half %d after it came online", strsignal(sig), cpu, h);
    Count("offline-cpu session checked");
  }
  ~OfflineCpuSession() {
    if (map) ::munmap(map, cfg.map_bytes);
    if (fd >= 0) ::close(fd);
  }
};

// Takes a CPU other than 0 offline and brings it back while the workers run:
// the module's per-CPU counters, sampling buffers and nonzero lists follow
// hotplug (a cpuhp callback that makes or frees a perf event deadlocks; the
// watchdog sees this thread stuck). Runs in the main thread (slot `slot`).
void HotplugCycle(Rng& r, size_t slot) {
  t_op = "cpu hotplug";
  const long n = ::sysconf(_SC_NPROCESSORS_CONF);
  if (n < 2) return;
  const int cpu = 1 + int(r.Below(u64(n - 1)));
  const std::string path = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/online";
  (*g_op_start)[slot] = NowNs();
  if (WriteSysfs(path, "0")) {
    Count("cpu offline");
    std::this_thread::sleep_for(std::chrono::milliseconds(r.Below(300)));
    std::optional<OfflineCpuSession> session;
    session.emplace(cpu);
    if (!WriteSysfs(path, "1")) {
      VIOLATION("cpu%d does not come back online: %s", cpu, ErrName(errno).c_str());
    } else {
      Count("cpu online again");
      if (session) session->OnlineAgain();
    }
  } else {
    Count("cpu offline refused " + ErrName(errno));
  }
  (*g_op_start)[slot] = 0;
}

// Dumps what a stuck thread is doing and fails.
void Watchdog() {
  while (!g_stop.load()) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    u64 now = NowNs();
    for (size_t i = 0; i < g_op_start->size(); ++i) {
      u64 s = (*g_op_start)[i].load();
      if (s && now > s && now - s > 120'000'000'000ULL) {
        Say("tprof_fuzz: %s %zu stuck in an operation for %llu s; blocked tasks follow in the kernel log",
            i < size_t(g_opt.threads) ? "worker" : "main thread", i,
            (now - s) / 1'000'000'000ULL);
        int fd = ::open("/proc/sysrq-trigger", O_WRONLY);
        if (fd >= 0) {
          (void)!::write(fd, "w", 1);
          ::close(fd);
        }
        VIOLATION("a thread is stuck (kernel deadlock?)");
        std::fflush(nullptr);
        ::_exit(1);
      }
    }
  }
}

// The whole run in this process (root, or the unprivileged worker).
void RunWorkers(bool cycles) {
  // Orphans of this process's tree (a forked subscriber's child whose
  // parent exited first) stay in it rather than going to init: a program
  // of the tree's scope still counts them (perf's inherit), and the event
  // checks find them by their parent chain (DescendsFrom()).
  (void)::prctl(PR_SET_CHILD_SUBREAPER, 1);
  SetUpArena();
  t_scratch = new Scratch;
  struct sigaction sa {};
  sa.sa_sigaction = OnFault;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_NODEFER | SA_SIGINFO;
  ::sigaction(SIGBUS, &sa, nullptr);
  ::sigaction(SIGSEGV, &sa, nullptr);
  {
    void* prime[1];
    (void)backtrace(prime, 1);
    ::signal(SIGABRT, OnAbort);
  }
  std::vector<std::atomic<u64>> starts(size_t(g_opt.threads) + 1);  // the workers, then the main thread
  g_op_start = &starts;
  int anchor = OpenDevice();
  if (anchor < 0) {
    VIOLATION("cannot open %s: %s", TPROF_DEVICE_PATH, ErrName(errno).c_str());
    return;
  }
  for (int i = 0; i < 4; ++i) {
    int fd = OpenDevice();
    if (fd >= 0) PoolAdd(std::make_shared<Fd>(fd));
  }
  std::vector<std::thread> ws;
  for (int i = 0; i < g_opt.threads; ++i) ws.emplace_back(WorkerMain, i);
  std::thread dog(Watchdog);
  Rng r(g_opt.seed * 7 + 3, kWorkerStream);
  const u64 end = NowNs() + u64(g_opt.seconds * 1e9);
  const bool can_cycle = cycles && !ModulePath().empty();
  u64 next_cycle = NowNs() + u64(g_opt.seconds * 1e9 / 3);
  while (NowNs() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (can_cycle && NowNs() >= next_cycle && NowNs() + 5'000'000'000ULL < end) {
      ModuleCycle(r, &anchor);
      next_cycle = NowNs() + u64(g_opt.seconds * 1e9 / 3);
    } else if (!g_unpriv && r.OneIn(15)) {
      HotplugCycle(r, size_t(g_opt.threads));
    } else if (anchor >= 0 && r.OneIn(20) && !g_unpriv) {
      t_op = "rmmod refused";
      int err = Rmmod();
      if (err == 0) {
        VIOLATION("rmmod tprof succeeded while a descriptor of /dev/tprof was open");
        Insmod(ModulePath(), "");
      }
    }
  }
  g_stop = true;
  {
    std::lock_guard<std::mutex> l(g_pause_mu);
    g_pause = false;
    g_pause_cv.notify_all();
  }
  for (auto& t : ws) t.join();
  dog.join();
  // Everything closed: no session may be left.
  {
    std::lock_guard<std::mutex> pl(g_pool_mu);
    g_pool.clear();
  }
  {
    std::lock_guard<std::mutex> ml(g_maps_mu);
    for (const Mapping& m : g_maps) ::munmap(m.addr, m.len);
    g_maps.clear();
  }
  t_op = "final";
  tprof_sampling_status st{};
  int err = 0;
  for (int i = 0; i < 100; ++i) {
    err = RawIoctl("SAMPLING_STATUS", anchor, TPROF_IOC_SAMPLING_STATUS, &st);
    if (err || !st.active) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (err) VIOLATION("SAMPLING_STATUS at the end: %s", ErrName(err).c_str());
  else if (st.active && !g_unpriv)
    VIOLATION("a session (pid %u) is still active after every descriptor was closed", st.pid);
  ::close(anchor);
  if (can_cycle) {
    // Nothing is open now: the module must go, and come back.
    if (RmmodUntilGone("at the end")) {
      err = Insmod(ModulePath(), "");
      if (err) VIOLATION("insmod at the end: %s", ErrName(err).c_str());
    }
  }
}

bool DropPrivileges() {
  if (::setgroups(0, nullptr) || ::setresgid(65534, 65534, 65534) || ::setresuid(65534, 65534, 65534))
    return false;
  // setuid made us non-dumpable; a normal user's process is dumpable.
  ::prctl(PR_SET_DUMPABLE, 1);
  return ::geteuid() == 65534;
}

int Report();

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: tprof_fuzz --seed N --seconds S [--threads T] [--unprivileged]\n"
               "                  [--no-module-cycles] [--verbose]\n");
  std::exit(2);
}
}  // namespace
}  // namespace tprof_fuzz::core

using namespace tprof_fuzz::core;

int main(int argc, char** argv) {
  bool have_seed = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) Usage();
      return argv[++i];
    };
    if (a == "--seed") { g_opt.seed = std::strtoull(value(), nullptr, 0); have_seed = true; }
    else if (a == "--seconds") g_opt.seconds = std::strtod(value(), nullptr);
    else if (a == "--threads") g_opt.threads = std::atoi(value());
    else if (a == "--unprivileged") g_opt.unprivileged = true;
    else if (a == "--no-module-cycles") g_opt.module_cycles = false;
    else if (a == "--verbose") g_opt.verbose = true;
    else Usage();
  }
  if (!have_seed) {
    g_opt.seed = NowNs() ^ (u64(::getpid()) << 32);
    g_opt.seed %= 1000000000ULL;
  }
  if (g_opt.threads < 1 || g_opt.threads > 64 || !(g_opt.seconds > 0)) Usage();
  std::printf("tprof_fuzz: seed %llu (repeat: tprof_fuzz --seed %llu --seconds %g --threads %d%s)\n",
              g_opt.seed, g_opt.seed, g_opt.seconds, g_opt.threads, g_opt.unprivileged ? " --unprivileged" : "");
  std::fflush(stdout);
  ::signal(SIGPIPE, SIG_IGN);
  MapSharedPids();
  if (::geteuid() == 0) tprof_fuzz::ExecScenesSetUpAsRoot();

  if (!g_opt.unprivileged) {
    if (::geteuid() != 0) {
      std::fprintf(stderr, "tprof_fuzz: root mode needs root (or pass --unprivileged)\n");
      return 2;
    }
    RunWorkers(g_opt.module_cycles);
  } else {
    if (::geteuid() != 0) {  // already unprivileged: just the workers
      g_unpriv = true;
      RunWorkers(false);
    } else {
      // A root parent keeps metrics on, runs system-wide sessions and burns
      // CPU (foreign data to leak), while the child fuzzes as nobody.
      int anchor = OpenDevice();
      if (anchor < 0) {
        std::fprintf(stderr, "tprof_fuzz: cannot open %s: %s\n", TPROF_DEVICE_PATH, std::strerror(errno));
        return 1;
      }
      tprof_metrics_config mc{};
      mc.nr_metrics = 3;
      mc.metrics[0].type = TPROF_METRIC_TIME;
      mc.metrics[1].type = TPROF_METRIC_DISPATCHES;
      mc.metrics[2].type = TPROF_METRIC_SOFTWARE;
      mc.metrics[2].config = 2;
      if (::ioctl(anchor, TPROF_IOC_METRICS_ENABLE, &mc) != 0)
        std::fprintf(stderr, "tprof_fuzz: METRICS_ENABLE: %s\n", std::strerror(errno));
      // kernel.perf_event_paranoid for this run (restored after): Debian's
      // 3 refuses every unprivileged program and session; at 2 and 1 the
      // workers' own programs, probes and sessions run (the seed picks).
      int paranoid_was = -1;
      if (FILE* f = std::fopen("/proc/sys/kernel/perf_event_paranoid", "r")) {
        if (std::fscanf(f, "%d", &paranoid_was) != 1) paranoid_was = -1;
        std::fclose(f);
      }
      const int paranoid = Rng(g_opt.seed * 17 + 3, kWorkerStream).Pick<int>({1, 2, 2, 3});
      auto set_paranoid = [](int v) {
        if (FILE* f = std::fopen("/proc/sys/kernel/perf_event_paranoid", "w")) {
          std::fprintf(f, "%d\n", v);
          std::fclose(f);
        }
      };
      if (paranoid_was >= 0) set_paranoid(paranoid);
      std::printf("tprof_fuzz: kernel.perf_event_paranoid %d for the unprivileged workers (was %d)\n", paranoid,
                  paranoid_was);
      void* shared = ::mmap(nullptr, size_t(kPage), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
      if (shared != MAP_FAILED) g_want_session = new (shared) std::atomic<int>(0);
      tprof_fuzz::ExecScenesStartCapableStranger();
      std::fflush(nullptr);
      pid_t child = ::fork();
      if (child == 0) {
        if (!DropPrivileges()) {
          std::fprintf(stderr, "tprof_fuzz: cannot drop privileges\n");
          ::_exit(1);
        }
        ::close(anchor);
        g_unpriv = true;
        RunWorkers(false);
        return Report();
      }
      Rng r(g_opt.seed * 13 + 5, kWorkerStream);
      int status = 0;
      while (::waitpid(child, &status, WNOHANG) == 0) {
        t_op = "root parent";
        if (r.OneIn(4) && !g_want_session->load()) {
          int fd = OpenDevice();
          tprof_sampling_config cfg{};
          cfg.pid = TPROF_PID_ALL;
          cfg.frequency_hz = 2000;
          if (fd >= 0 && ::ioctl(fd, TPROF_IOC_SAMPLING_START, &cfg) == 0) {
            tprof_window_add wa{};
            wa.kind = TPROF_WINDOW_KERNEL;
            wa.start = 0xffffffff81000000ULL;
            wa.length = 1 << 20;
            wa.block_bytes = 4096;
            (void)::ioctl(fd, TPROF_IOC_WINDOW_ADD, &wa);
          }
          Burn(50'000'000 + r.Below(100'000'000));
          if (fd >= 0) ::close(fd);
        } else if (r.OneIn(3)) {
          RootPmuRound(r);
        } else if (r.OneIn(10)) {
          (void)::ioctl(anchor, TPROF_IOC_METRICS_DISABLE, nullptr);
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          (void)::ioctl(anchor, TPROF_IOC_METRICS_ENABLE, &mc);
        } else {
          Burn(20'000'000);
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          if (::syscall(SYS_delete_module, "tprof", O_NONBLOCK) == 0) {
            VIOLATION("rmmod tprof succeeded while a descriptor of /dev/tprof was open");
            Insmod(ModulePath(), "");
          }
        }
      }
      ::close(anchor);
      tprof_fuzz::ExecScenesStopCapableStranger();
      if (paranoid_was >= 0) set_paranoid(paranoid_was);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        Say("tprof_fuzz: the unprivileged worker process ended with status 0x%x", status);
        g_violations++;
      }
    }
  }

  return Report();
}

namespace tprof_fuzz::core {
namespace {
int Report() {
  {
    std::lock_guard<std::mutex> l(g_stats_mu);
    if (!g_stats.empty()) {
      std::printf("tprof_fuzz%s: %llu operations; what happened:\n", g_unpriv ? " (unprivileged)" : "",
                  g_ops.load());
      for (const auto& [what, n] : g_stats) std::printf("  %-40s %llu\n", what.c_str(), n);
    }
  }
  if (g_unpriv || !g_opt.unprivileged) {
    // Only when the workers had time for it: the accountant is about 1 in
    // 35 operations, and a guest on a loaded host has run 34 in 25 s.
    if (g_accounts_done.load() == 0 && g_ops.load() >= 200 && !(g_unpriv && PerfParanoid() > 2)) {
      Say("VIOLATION: no sampling session's books were checked in %g s and %llu operations (the accountant "
          "never got a session)", g_opt.seconds, g_ops.load());
      g_violations++;
    }
  }
  u64 v = g_violations.load();
  std::printf("tprof_fuzz%s: seed %llu: %s (%llu violations)\n", g_unpriv ? " (unprivileged)" : "",
              g_opt.seed, v ? "FAIL" : "PASS", v);
  std::fflush(nullptr);
  return v ? 1 : 0;
}
}  // namespace
}  // namespace tprof_fuzz::core
