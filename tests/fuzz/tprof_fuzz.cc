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
#include "fuzz.h"

#include <linux/tprof.h>
#include <linux/genetlink.h>
#include <linux/perf_event.h>
#include <linux/netlink.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <setjmp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

// ---- basics ------------------------------------------------------------------

using u64 = unsigned long long;  // what __u64 is: one printf format (%llu) for all

constexpr u64 kKernelPtr = 0xffff800000000000ULL;
// arm64: a user breakpoint of tprof's where another program of tprof's has
// one of the other kind (a uprobe vs. a debug register) is EBUSY; elsewhere
// no PMU_CREATE is (0 never matches an errno).
#if defined(__aarch64__)
constexpr int kBreakpointBusy = EBUSY;
#else
constexpr int kBreakpointBusy = 0;
#endif
// The end of user addresses: x86-64's 47 bits; arm64's 48 (52 at most).
#if defined(__aarch64__)
constexpr u64 kUserEnd = 1ULL << 52;
#else
constexpr u64 kUserEnd = 0x0000800000000000ULL;
#endif
const long kPage = ::sysconf(_SC_PAGESIZE);

struct Options {
  u64 seed = 0;
  double seconds = 30;
  int threads = 4;
  bool unprivileged = false;
  bool module_cycles = true;
  bool verbose = false;
};
Options g_opt;

std::atomic<u64> g_violations{0};
std::atomic<bool> g_stop{false};
std::atomic<bool> g_in_child{false};  // forked children report with write(2) and _exit(66)
bool g_unpriv = false;                // this process is the unprivileged worker

u64 NowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return u64(ts.tv_sec) * 1'000'000'000 + u64(ts.tv_nsec);
}
uint32_t Gettid() { return static_cast<uint32_t>(::syscall(SYS_gettid)); }

// Output without stdio locks (safe in forked children of a threaded process).
void Say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void Say(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (n > int(sizeof(buf)) - 2) n = int(sizeof(buf)) - 2;
  buf[n++] = '\n';
  (void)!::write(2, buf, size_t(n));
}

thread_local const char* t_op = "setup";
// Parsing a buffer another thread may hand back meanwhile: exercise only.
thread_local bool t_quiet = false;

#define VIOLATION(...)                                                                    \
  do {                                                                                    \
    if (t_quiet) break;                                                                   \
    char vbuf_[768];                                                                      \
    std::snprintf(vbuf_, sizeof(vbuf_), __VA_ARGS__);                                     \
    Say("VIOLATION: [pid %d tid %u op %s%s] %s", int(::getpid()), Gettid(), t_op,         \
        g_unpriv ? ", unprivileged" : "", vbuf_);                                         \
    if (g_in_child.load()) ::_exit(66);                                                   \
    g_violations.fetch_add(1);                                                            \
  } while (0)

struct Rng {
  u64 s;
  explicit Rng(u64 seed) : s(seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL) {}
  u64 Next() {  // splitmix64
    u64 z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  u64 Below(u64 n) { return n ? Next() % n : 0; }
  bool OneIn(u64 n) { return Below(n) == 0; }
  template <typename T>
  T Pick(std::initializer_list<T> l) {
    return *(l.begin() + Below(l.size()));
  }
  // Boundary-heavy 64-bit values.
  u64 Edgy() {
    switch (Below(8)) {
      case 0: return 0;
      case 1: return 1;
      case 2: return ~0ULL;
      case 3: return 1ULL << Below(64);
      case 4: return (1ULL << Below(64)) - 1;
      case 5: return 0xffffffffULL;
      case 6: return Below(4096);
      default: return Next();
    }
  }
};

std::string ErrName(int e) {
  if (e == 0) return "ok";
  const char* n = ::strerrorname_np(e);
  return n ? n : std::to_string(e);
}

// ---- statistics (what was exercised) ----------------------------------------------

std::mutex g_stats_mu;
std::map<std::string, u64> g_stats;
void Count(const std::string& what, u64 n = 1) {
  if (g_in_child.load()) return;
  std::lock_guard<std::mutex> l(g_stats_mu);
  g_stats[what] += n;
}

// ---- the process tree the unprivileged worker owns --------------------------------

std::mutex g_own_mu;
std::set<uint32_t> g_own_pids;
void AddOwnPid(uint32_t pid) {
  std::lock_guard<std::mutex> l(g_own_mu);
  g_own_pids.insert(pid);
}
// Every process the workers fork (ForkOwn), strangers (OpProbes, own
// processes but no descendants) among them; forked subscribers, whose
// own-pid set is a copy from their fork, find them here too: a MAP_SHARED
// ring mapped before any fork (main). The root parent adds none.
constexpr size_t kSharedPids = 1000;  // with the index: one page
std::atomic<uint32_t>* g_shared_pids = nullptr;
std::atomic<uint32_t>* g_shared_pids_next = nullptr;
void MapSharedPids() {
  void* m = ::mmap(nullptr, size_t(kPage), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return;
  g_shared_pids_next = new (m) std::atomic<uint32_t>(0);
  g_shared_pids = new (static_cast<uint32_t*>(m) + 1) std::atomic<uint32_t>[kSharedPids]();
}
void AddSharedPid(uint32_t pid) {
  if (g_shared_pids) g_shared_pids[g_shared_pids_next->fetch_add(1) % kSharedPids].store(pid);
}
bool IsOwnPid(uint32_t pid) {
  if (pid == uint32_t(::getpid())) return true;
  if (g_shared_pids)
    for (size_t i = 0; i < kSharedPids; ++i)
      if (g_shared_pids[i].load(std::memory_order_relaxed) == pid) return true;
  std::lock_guard<std::mutex> l(g_own_mu);
  return g_own_pids.count(pid) != 0;
}

// Forks a process of this worker's tree. Its pid goes into the shared
// ring as soon as fork returns here, and the child adds itself before it
// runs anything else: a record of it is not judged before it is known (a
// stranger once ran unregistered and orphaned: seed 1). g_own_mu is held
// across fork so that the child's copy of the own-pid set is consistent.
// Only the workers' forks: the root parent's children are foreign to the
// unprivileged workers.
pid_t ForkOwn() {
  g_own_mu.lock();
  pid_t pid = ::fork();
  g_own_mu.unlock();
  if (pid == 0) AddSharedPid(uint32_t(::getpid()));
  else if (pid > 0) AddSharedPid(uint32_t(pid));
  return pid;
}

// IsOwnPid, allowing a fork that has not returned yet in its parent (nor
// run its child) a moment to register: a sample of a child can be taken
// in the kernel's return from fork, before either side adds the pid. A pid
// still unknown after 200 ms is foreign (and is not waited for again).
bool IsOwnPidSettled(uint32_t pid) {
  thread_local std::set<uint32_t> foreign;
  if (IsOwnPid(pid)) return true;
  if (foreign.count(pid)) return false;
  for (int i = 0; i < 200; ++i) {
    ::usleep(1000);
    if (IsOwnPid(pid)) return true;
  }
  foreign.insert(pid);
  return false;
}

// Whether live process `pid` descends from `ancestor` (its parent chain in
// /proc). A process that is gone cannot be checked and counts as yes.
bool DescendsFrom(uint32_t pid, uint32_t ancestor) {
  for (int depth = 0; depth < 64; ++depth) {
    if (pid == ancestor) return true;
    if (pid <= 1) return false;
    FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
    if (!f) return depth > 0 ? false : true;
    char buf[512] = {};
    size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    const char* rp = std::strrchr(buf, ')');
    unsigned ppid = 0;
    if (n == 0 || !rp || std::sscanf(rp + 1, " %*c %u", &ppid) != 1) return true;
    pid = ppid;
  }
  return false;
}

// What a violation needs to say about a pid: its name, state and parent
// chain while it lives ("gone" when it does not).
std::string DescribePid(uint32_t pid) {
  std::string out;
  for (int depth = 0; depth < 8 && pid > 1; ++depth) {
    FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
    if (!f) return out + std::to_string(pid) + " (gone)";
    char buf[512] = {};
    size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    const char* lp = std::strchr(buf, '(');
    const char* rp = std::strrchr(buf, ')');
    char state = '?';
    unsigned ppid = 0;
    if (n == 0 || !lp || !rp || std::sscanf(rp + 1, " %c %u", &state, &ppid) != 2) return out + std::to_string(pid) + " (?)";
    out += std::to_string(pid) + " " + std::string(lp, size_t(rp - lp + 1)) + " " + state + " <- ";
    pid = ppid;
  }
  return out + std::to_string(pid);
}

// Any u64 field of an unprivileged output that looks like a kernel pointer.
// ranges: {offset, bytes} runs of u64 fields of the struct at p.
struct U64s {
  size_t off, bytes;
};
#define U64F(type, field) U64s{offsetof(type, field), sizeof(type::field)}
void CheckNoKernelPointers(const char* what, const void* p, std::initializer_list<U64s> ranges) {
  if (!g_unpriv) return;
  for (const U64s& r : ranges)
    for (size_t off = r.off; off + 8 <= r.off + r.bytes; off += 8) {
      u64 v;
      std::memcpy(&v, static_cast<const char*>(p) + off, 8);
      if (v >= kKernelPtr)
        VIOLATION("%s: u64 at offset %zu is 0x%llx, a kernel-pointer-looking value", what,
                  off, v);
    }
}

bool AllZero(const void* p, size_t n) {
  const unsigned char* c = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i)
    if (c[i]) return false;
  return true;
}

// ---- pointers ---------------------------------------------------------------------

// Fixed hostile addresses and pages set up once.
struct Arena {
  char* ro = nullptr;        // a read-only zero page
  char* none = nullptr;      // a PROT_NONE page
  char* rw_then_none = nullptr;  // a RW page followed by a PROT_NONE page
} g_arena;

void SetUpArena() {
  g_arena.ro = static_cast<char*>(
      ::mmap(nullptr, kPage, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  g_arena.none = static_cast<char*>(
      ::mmap(nullptr, kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  g_arena.rw_then_none = static_cast<char*>(
      ::mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (g_arena.ro == MAP_FAILED || g_arena.none == MAP_FAILED ||
      g_arena.rw_then_none == MAP_FAILED ||
      ::mprotect(g_arena.rw_then_none + kPage, kPage, PROT_NONE) != 0) {
    std::perror("tprof_fuzz: arena");
    std::exit(2);
  }
}

enum class PtrKind { kValid, kNull, kLow, kNone, kReadOnly, kStraddle, kKernel, kNonCanonical, kOdd };
const char* PtrKindName(PtrKind k) {
  static const char* names[] = {"valid", "null", "low", "prot-none", "read-only",
                                "straddling", "kernel", "non-canonical", "misaligned"};
  return names[int(k)];
}
PtrKind RandomBadPtr(Rng& r) {
  return r.Pick({PtrKind::kNull, PtrKind::kLow, PtrKind::kNone, PtrKind::kReadOnly,
                 PtrKind::kStraddle, PtrKind::kKernel, PtrKind::kNonCanonical});
}
// Readable / writable for the kernel?
bool Readable(PtrKind k) {
  return k == PtrKind::kValid || k == PtrKind::kReadOnly || k == PtrKind::kOdd;
}
bool Writable(PtrKind k) { return k == PtrKind::kValid || k == PtrKind::kOdd; }

u64 HostilePtr(Rng& r, PtrKind k, size_t bytes) {
  switch (k) {
    case PtrKind::kNull: return 0;
    case PtrKind::kLow: return r.Pick<u64>({8, 16, 0x1000, 0xfff0});
    case PtrKind::kNone: return u64(uintptr_t(g_arena.none)) + r.Below(64) * 8;
    case PtrKind::kReadOnly: return u64(uintptr_t(g_arena.ro));
    case PtrKind::kStraddle: {
      size_t head = bytes > 8 ? 8 * (1 + r.Below((bytes - 1) / 8)) : 0;
      return u64(uintptr_t(g_arena.rw_then_none + kPage - head));
    }
    case PtrKind::kKernel:
      return r.Pick<u64>({0xffff888000000000ULL, 0xffffffff81000000ULL,
                               0xffffffffff600000ULL, ~0ULL - 7});
    case PtrKind::kNonCanonical:
      return r.Pick<u64>({0x0000800000000000ULL, 0x8000000000000000ULL,
                               0x00ff000000000000ULL});
    default: return 0;
  }
}

// ---- /dev/tprof descriptors shared between workers -----------------------------

struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) {}
  ~Fd() { ::close(fd); }
  // Session state as this process believes it (hints only: other threads race).
  std::atomic<u64> map_bytes{0};
  std::atomic<uint32_t> half_bytes{0}, nr_cpu{0}, ctl_bytes{0};
  std::atomic<u64> started_ns{0};
  std::mutex layout_mu;  // the four above, set together
};
using FdRef = std::shared_ptr<Fd>;

std::mutex g_pool_mu;
std::vector<FdRef> g_pool;  // at most kPoolMax
constexpr size_t kPoolMax = 12;

FdRef PoolPick(Rng& r) {
  std::lock_guard<std::mutex> l(g_pool_mu);
  if (g_pool.empty()) return nullptr;
  return g_pool[r.Below(g_pool.size())];
}
void PoolAdd(FdRef f) {
  std::lock_guard<std::mutex> l(g_pool_mu);
  if (g_pool.size() < kPoolMax) g_pool.push_back(std::move(f));
}
FdRef PoolTake(Rng& r) {
  std::lock_guard<std::mutex> l(g_pool_mu);
  if (g_pool.empty()) return nullptr;
  size_t i = r.Below(g_pool.size());
  FdRef f = g_pool[i];
  g_pool.erase(g_pool.begin() + long(i));
  return f;
}
std::vector<FdRef> PoolRefs() {
  std::lock_guard<std::mutex> l(g_pool_mu);
  return g_pool;
}

// Mappings of the device shared between workers (munmap'd by anyone).
struct Mapping {
  char* addr;
  size_t len;
  bool self_page;
};
std::mutex g_maps_mu;
std::vector<Mapping> g_maps;
constexpr size_t kMapsMax = 24;

int OpenDevice(int flags = O_RDWR) {
  int fd = ::open(TPROF_DEVICE_PATH, flags | O_CLOEXEC);
  return fd;
}

// ---- one ioctl, checked --------------------------------------------------------

constexpr size_t kCanary = 64;  // bytes after a struct or array the kernel must not touch
constexpr unsigned char kCanaryByte = 0xA5;

// A thread's scratch: the argument struct, and embedded arrays with canaries.
struct Scratch {
  alignas(64) unsigned char arg[4096];
  alignas(64) unsigned char array[64 * 1024 + kCanary];
};
thread_local Scratch* t_scratch = nullptr;

struct Call {
  // What the fill step did.
  bool must_fail = false;     // a defect the header says fails (reserved, flags, ...)
  std::string defect;         // for messages
  PtrKind embedded = PtrKind::kValid;  // an embedded pointer's kind (if any)
  size_t embedded_bytes = 0;  // bytes the kernel may write at a valid embedded pointer
  bool embedded_used = false;
};

struct Worker;
using FillFn = void (*)(Rng&, Worker&, void* arg, Call&);
using CheckFn = void (*)(Worker&, const void* in, const void* out, const Call&);

struct IoctlSpec {
  const char* name;
  unsigned long cmd;
  std::vector<int> errnos;  // documented, besides EFAULT and EINVAL
  bool privileged_only;     // CAP_PERFMON or CAP_SYS_ADMIN, whatever the argument
  FillFn fill;              // a mostly valid argument, with random defects
  CheckFn check;            // outputs of a successful call
};

struct Worker {
  int index;
  Rng rng;
  std::vector<Mapping> self_pages;  // this thread's own self pages
  explicit Worker(int i, u64 seed) : index(i), rng(seed) {}
};

void MaybeDefectReserved(Rng& r, Call& c, void* field, size_t bytes, const char* name) {
  if (!r.OneIn(6)) return;
  unsigned char* p = static_cast<unsigned char*>(field);
  p[r.Below(bytes)] = static_cast<unsigned char>(1 + r.Below(255));
  c.must_fail = true;
  c.defect = std::string("nonzero ") + name;
}

// An embedded array pointer: valid (with canaries) most of the time. A
// valid one is the thread's scratch array, which is on the heap: its
// capacity (count, in elements) is cut to what the array holds, or the
// kernel, rightly writing up to the capacity, overruns the heap (seed
// 4242's root half aborted: a 2^21-cell kernel window read with an edge
// capacity wrote cell counts over malloc's free lists). Huge capacities
// stay with the bad pointers.
template <typename T>
u64 EmbeddedPtr(Rng& r, Call& c, size_t elem, T& count) {
  c.embedded_used = true;
  if (r.OneIn(4)) {
    c.embedded = RandomBadPtr(r);
    // Straddling: the first element already crosses into the PROT_NONE page.
    return HostilePtr(r, c.embedded, elem);
  }
  c.embedded = PtrKind::kValid;
  const u64 fits = (sizeof(t_scratch->array) - kCanary) / elem;
  if (u64(count) > fits) count = T(fits);
  c.embedded_bytes = size_t(u64(count) * elem);
  std::memset(t_scratch->array, kCanaryByte, sizeof(t_scratch->array));
  return u64(uintptr_t(t_scratch->array));
}

void CheckArrayCanary(const char* what, size_t written_max) {
  const unsigned char* a = t_scratch->array;
  for (size_t i = written_max; i < written_max + kCanary && i < sizeof(t_scratch->array); ++i)
    if (a[i] != kCanaryByte) {
      VIOLATION("%s: the kernel wrote byte %zu of the caller's array, past the %zu it may write",
                what, i, written_max);
      return;
    }
}

uint32_t RandomPid(Rng& r) {
  uint32_t own = uint32_t(::getpid());
  switch (r.Below(8)) {
    case 0: return 0;
    case 1: return own;
    case 2: return 1;
    case 3: return TPROF_PID_ALL;
    case 4: return uint32_t(r.Below(32768));
    case 5: return uint32_t(r.Edgy());
    default: {
      std::lock_guard<std::mutex> l(g_own_mu);
      if (g_own_pids.empty()) return own;
      auto it = g_own_pids.begin();
      std::advance(it, long(r.Below(g_own_pids.size())));
      return *it;
    }
  }
}

uint32_t RandomTid(Rng& r) {
  switch (r.Below(6)) {
    case 0: return 0;
    case 1: return Gettid();
    case 2: return uint32_t(::getpid());
    case 3: return 1;
    case 4: return uint32_t(r.Below(32768));
    default: return RandomPid(r);
  }
}

// -- GET_INFO
void FillInfo(Rng& r, Worker&, void* a, Call& c) {
  auto* in = static_cast<tprof_info*>(a);
  *in = {};
  if (r.OneIn(3)) {  // output fields are ignored on input
    for (size_t i = 0; i < offsetof(tprof_info, cpu_stats); ++i)
      reinterpret_cast<unsigned char*>(in)[i] = static_cast<unsigned char>(r.Next());
  }
  switch (r.Below(4)) {
    case 0: break;
    case 1:
      in->cpu_stats_count = uint32_t(r.Pick<u64>({1, 2, 3, 64, 512, r.Edgy()}));
      in->cpu_stats = EmbeddedPtr(r, c, sizeof(tprof_cpu_stats), in->cpu_stats_count);
      break;
    case 2:  // half given: EINVAL
      if (r.OneIn(2)) in->cpu_stats_count = 1 + uint32_t(r.Below(4));
      else in->cpu_stats = u64(uintptr_t(t_scratch->array));
      c.must_fail = true;
      c.defect = "cpu_stats and cpu_stats_count half given";
      break;
    default:
      in->cpu_stats_count = 1 + uint32_t(r.Below(8));
      in->cpu_stats = EmbeddedPtr(r, c, sizeof(tprof_cpu_stats), in->cpu_stats_count);
  }
  MaybeDefectReserved(r, c, &in->__pad, sizeof(in->__pad), "__pad");
  MaybeDefectReserved(r, c, in->resv, sizeof(in->resv), "resv");
  if (c.embedded_used && c.embedded != PtrKind::kValid && in->cpu_stats_count &&
      !Writable(c.embedded)) {
    c.must_fail = true;
    c.defect = std::string("cpu_stats ") + PtrKindName(c.embedded);
  }
}
void CheckInfo(Worker&, const void* i, const void* o, const Call&) {
  auto* in = static_cast<const tprof_info*>(i);
  auto* out = static_cast<const tprof_info*>(o);
  if (out->abi_major != TPROF_ABI_MAJOR || out->abi_minor < TPROF_ABI_MINOR)
    VIOLATION("GET_INFO: ABI %u.%u, built against %u.%u", out->abi_major, out->abi_minor,
              TPROF_ABI_MAJOR, TPROF_ABI_MINOR);
  if (out->nr_online_cpus == 0 || out->nr_online_cpus > out->nr_cpu_ids)
    VIOLATION("GET_INFO: %u CPUs online of %u", out->nr_online_cpus, out->nr_cpu_ids);
  if (out->state > TPROF_STATE_SAMPLING) VIOLATION("GET_INFO: state %u", out->state);
  uint32_t want = std::min(in->cpu_stats_count, out->nr_cpu_ids);
  if (out->cpu_stats_count != want)
    VIOLATION("GET_INFO: cpu_stats_count %u, expected min(%u, %u)", out->cpu_stats_count,
              in->cpu_stats_count, out->nr_cpu_ids);
  if (!AllZero(out->resv, sizeof(out->resv)) || out->__pad || !AllZero(out->total.resv, sizeof(out->total.resv)))
    VIOLATION("GET_INFO: reserved output bytes are not zero");
  CheckNoKernelPointers("GET_INFO", out, {U64F(tprof_info, features), U64F(tprof_info, total)});
  if (in->cpu_stats == u64(uintptr_t(t_scratch->array)) && in->cpu_stats_count) {
    auto* st = reinterpret_cast<const tprof_cpu_stats*>(t_scratch->array);
    for (uint32_t c = 0; c < out->cpu_stats_count && c < 512; ++c) {
      if (st[c].cpu != c || st[c].online > 1 || !AllZero(st[c].counters.resv, sizeof(st[c].counters.resv)))
        VIOLATION("GET_INFO: cpu_stats[%u] = {cpu %u, online %u, resv nonzero %d}", c, st[c].cpu,
                  st[c].online, !AllZero(st[c].counters.resv, sizeof(st[c].counters.resv)));
      CheckNoKernelPointers("GET_INFO cpu_stats", &st[c], {U64F(tprof_cpu_stats, counters)});
    }
    CheckArrayCanary("GET_INFO cpu_stats", size_t(out->cpu_stats_count) * sizeof(tprof_cpu_stats));
  }
}

// -- metrics
void RandomMetric(Rng& r, tprof_metric* m, Call& c) {
  *m = {};
  switch (r.Below(10)) {
    case 0: m->type = TPROF_METRIC_TIME; break;
    case 1: m->type = TPROF_METRIC_DISPATCHES; break;
    case 2:
    case 3:
    case 4:
      m->type = TPROF_METRIC_SOFTWARE;
      m->config = r.Pick<u64>({0 /* cpu-clock */, 1 /* task-clock */, 2 /* page-faults */,
                                    3 /* context-switches */, 4 /* cpu-migrations */});
      break;
    case 5:
      m->type = TPROF_METRIC_SOFTWARE;
      m->config = r.Edgy();  // may be unknown: EINVAL/EOPNOTSUPP/ENOENT-like
      break;
    case 6: m->type = TPROF_METRIC_HARDWARE; m->config = r.Below(10); break;
    case 7: m->type = TPROF_METRIC_RAW; m->config = r.Edgy(); break;
    case 8:
      m->type = uint32_t(r.Pick<u64>({0, 6, 7, 0xffffffff}));
      c.must_fail = true;
      c.defect = "unknown metric type";
      break;
    default: m->type = TPROF_METRIC_TIME; m->config = 1 + r.Below(5); break;  // config for TIME
  }
  MaybeDefectReserved(r, c, &m->__pad, sizeof(m->__pad), "metric __pad");
}
void FillMetricsEnable(Rng& r, Worker&, void* a, Call& c) {
  auto* in = static_cast<tprof_metrics_config*>(a);
  *in = {};
  in->nr_metrics = uint32_t(r.OneIn(8) ? r.Edgy() : 1 + r.Below(4));
  if (in->nr_metrics == 0 || in->nr_metrics > TPROF_MAX_METRICS) {
    c.must_fail = true;
    c.defect = "nr_metrics out of range";
  }
  if (r.OneIn(3)) {  // the common valid set
    in->metrics[0] = {TPROF_METRIC_TIME, 0, 0};
    if (in->nr_metrics > 1) in->metrics[1] = {TPROF_METRIC_DISPATCHES, 0, 0};
    if (in->nr_metrics > 2) in->metrics[2] = {TPROF_METRIC_SOFTWARE, 0, 2};
    for (uint32_t i = 3; i < in->nr_metrics && i < TPROF_MAX_METRICS; ++i)
      in->metrics[i] = {TPROF_METRIC_SOFTWARE, 0, 3 + (i % 2)};
  } else {
    for (uint32_t i = 0; i < std::min<uint32_t>(in->nr_metrics, TPROF_MAX_METRICS); ++i)
      RandomMetric(r, &in->metrics[i], c);
  }
  if (r.OneIn(8)) {
    in->flags = uint32_t(r.Edgy()) | 1;
    c.must_fail = true;
    c.defect = "unknown flags";
  }
  MaybeDefectReserved(r, c, in->resv, sizeof(in->resv), "resv");
}
void CheckNothing(Worker&, const void*, const void*, const Call&) {}

void FillNone(Rng&, Worker&, void*, Call&) {}

void FillZero(Rng& r, Worker&, void* a, Call& c) {
  std::memset(a, 0, 512);
  if (r.OneIn(4)) {  // output-only structs: input bytes are ignored
    for (int i = 0; i < 512; ++i) static_cast<unsigned char*>(a)[i] = static_cast<unsigned char>(r.Next());
  }
  (void)c;
}

void CheckMetricValues(const char* what, const tprof_thread_metrics& t) {
  if (t.nr_metrics > TPROF_MAX_METRICS) VIOLATION("%s: nr_metrics %u", what, t.nr_metrics);
  for (uint32_t i = t.nr_metrics; i < TPROF_MAX_METRICS; ++i)
    if (t.values[i]) VIOLATION("%s: values[%u] = %llu beyond nr_metrics %u", what, i, t.values[i], t.nr_metrics);
  if (t.flags & ~TPROF_THREAD_EXITED) VIOLATION("%s: unknown flags 0x%x", what, t.flags);
  if (t.tid == 0 || t.pid == 0) VIOLATION("%s: pid %u tid %u", what, t.pid, t.tid);
  if (g_unpriv && !IsOwnPid(t.pid))
    VIOLATION("%s: the unprivileged caller got thread %u of process %u, not its own", what, t.tid, t.pid);
  CheckNoKernelPointers(what, &t, {U64F(tprof_thread_metrics, identity), U64F(tprof_thread_metrics, comm),
                                   U64F(tprof_thread_metrics, values)});
}

void CheckMetricsStatus(Worker&, const void*, const void* o, const Call&) {
  auto* out = static_cast<const tprof_metrics_status*>(o);
  if (out->enabled > 1 || out->nr_metrics > TPROF_MAX_METRICS || out->table_used > out->table_capacity ||
      out->listed > out->table_used || out->__pad || !AllZero(out->resv, sizeof(out->resv)))
    VIOLATION("METRICS_STATUS: enabled %u nr_metrics %u used %u/%u listed %u pad %u resv %d",
              out->enabled, out->nr_metrics, out->table_used, out->table_capacity, out->listed,
              out->__pad, !AllZero(out->resv, sizeof(out->resv)));
  for (const tprof_metric& m : out->metrics) CheckNoKernelPointers("METRICS_STATUS metric", &m, {U64F(tprof_metric, config)});
  CheckNoKernelPointers("METRICS_STATUS", out, {U64F(tprof_metrics_status, untracked_threads), U64F(tprof_metrics_status, resv)});
}

void FillThreadRead(Rng& r, Worker&, void* a, Call& c) {
  auto* in = static_cast<tprof_thread_read*>(a);
  std::memset(in, 0, sizeof(*in));
  if (r.OneIn(4))  // output fields are ignored on input
    for (size_t i = offsetof(tprof_thread_read, thread); i < offsetof(tprof_thread_read, resv); ++i)
      reinterpret_cast<unsigned char*>(in)[i] = static_cast<unsigned char>(r.Next());
  in->tid = RandomTid(r);
  if (r.OneIn(3)) in->flags = TPROF_THREAD_READ_TOTALS;  // the read that takes nothing
  if (r.OneIn(8)) {
    in->flags = uint32_t(r.Edgy()) | 2;  // a bit beyond TPROF_THREAD_READ_TOTALS
    c.must_fail = true;
    c.defect = "unknown flags";
  }
  MaybeDefectReserved(r, c, in->resv, sizeof(in->resv), "resv");
}
void CheckThreadRead(Worker&, const void* i, const void* o, const Call&) {
  auto* in = static_cast<const tprof_thread_read*>(i);
  auto* out = static_cast<const tprof_thread_read*>(o);
  uint32_t want = in->tid ? in->tid : Gettid();
  if (out->thread.tid != want) VIOLATION("THREAD_READ of tid %u returned tid %u", in->tid, out->thread.tid);
  if (g_unpriv && !IsOwnPid(out->thread.pid))
    VIOLATION("THREAD_READ: unprivileged read of tid %u (process %u, not its own) succeeded",
              in->tid, out->thread.pid);
  CheckMetricValues("THREAD_READ", out->thread);
}

void CheckReadSelf(Worker&, const void*, const void* o, const Call&) {
  auto* out = static_cast<const tprof_self_read*>(o);
  if (out->identity == 0) VIOLATION("READ_SELF: identity 0");
  CheckNoKernelPointers("READ_SELF", out, {U64s{0, sizeof(*out)}});
}

void FillDrain(Rng& r, Worker&, void* a, Call& c) {
  auto* in = static_cast<tprof_drain*>(a);
  std::memset(in, 0, sizeof(*in));
  in->pid = RandomPid(r);
  in->capacity = uint32_t(r.OneIn(10) ? r.Edgy() : r.Below(40));
  if (in->capacity || r.OneIn(2))
    in->records = EmbeddedPtr(r, c, sizeof(tprof_thread_metrics), in->capacity);
  if (r.OneIn(4))
    for (size_t k = offsetof(tprof_drain, count); k < offsetof(tprof_drain, resv); ++k)
      reinterpret_cast<unsigned char*>(in)[k] = static_cast<unsigned char>(r.Next());
  MaybeDefectReserved(r, c, in->resv, sizeof(in->resv), "resv");
}
void CheckDrain(Worker&, const void* i, const void* o, const Call& c) {
  auto* in = static_cast<const tprof_drain*>(i);
  auto* out = static_cast<const tprof_drain*>(o);
  if (out->count > in->capacity) VIOLATION("DRAIN: count %u > capacity %u", out->count, in->capacity);
  if (!AllZero(out->resv, sizeof(out->resv))) VIOLATION("DRAIN: reserved output nonzero");
  if (g_unpriv && in->pid == TPROF_PID_ALL) VIOLATION("DRAIN: TPROF_PID_ALL succeeded unprivileged");
  if (c.embedded_used && c.embedded != PtrKind::kValid && out->count > 0 && !Writable(c.embedded))
    VIOLATION("DRAIN: wrote %u rows to a %s records pointer and succeeded", out->count,
              PtrKindName(c.embedded));
  if (in->records == u64(uintptr_t(t_scratch->array))) {
    auto* rows = reinterpret_cast<const tprof_thread_metrics*>(t_scratch->array);
    uint32_t n = std::min<uint32_t>(out->count, uint32_t(c.embedded_bytes / sizeof(tprof_thread_metrics)));
    uint32_t want_pid = in->pid == 0 ? uint32_t(::getpid()) : in->pid;
    for (uint32_t k = 0; k < n; ++k) {
      CheckMetricValues("DRAIN row", rows[k]);
      if (in->pid != TPROF_PID_ALL && rows[k].pid != want_pid)
        VIOLATION("DRAIN of pid %u returned a row of pid %u (tid %u)", in->pid, rows[k].pid, rows[k].tid);
    }
    CheckArrayCanary("DRAIN records", size_t(out->count) * sizeof(tprof_thread_metrics));
  }
  CheckNoKernelPointers("DRAIN", out, {U64F(tprof_drain, untracked_threads), U64F(tprof_drain, resv)});
}

// -- sampling
// mode 0: anything; 1: mostly valid; 2: valid.
void FillSamplingConfig(Rng& r, tprof_sampling_config* in, Call& c, int mode) {
  std::memset(in, 0, sizeof(*in));
  in->pid = g_unpriv ? (r.OneIn(6) ? RandomPid(r) : uint32_t(::getpid())) : (r.OneIn(2) ? TPROF_PID_ALL : RandomPid(r));
  in->half_bytes = uint32_t(r.Pick<u64>({0, 4096, 8192, 16384, 65536}));
  in->frequency_hz = uint32_t(r.Pick<u64>({0, 100, 1000, 5000, 20000}));
  if (r.OneIn(2)) in->flags = TPROF_SAMPLING_CALLERS;
  if (r.OneIn(3)) {
    in->flags |= TPROF_SAMPLING_STACKS;
    in->stack_depth = 1 + uint32_t(r.Below(TPROF_MAX_STACK_DEPTH));
  }
  if (r.OneIn(5)) {
    in->frequency_hz = 0;
    in->event_type = TPROF_METRIC_SOFTWARE;
    in->event_config = r.Pick<u64>({0, 1, 2, 3});
    in->event_period = r.Pick<u64>({1, 10, 1000, 100000});
  }
  if (r.OneIn(4)) {  // chosen CPUs (ABI 1.16): CPU 0 and/or 1, or none
    uint32_t words = 1 + uint32_t(r.Below(TPROF_SAMPLING_MAX_CPUS_BYTES / 8));
    in->cpus = EmbeddedPtr(r, c, sizeof(u64), words);
    in->cpus_bytes = words * uint32_t(sizeof(u64));
    if (mode == 2 && c.embedded != PtrKind::kValid) {  // valid: every CPU instead
      in->cpus = 0;
      in->cpus_bytes = 0;
    } else if (c.embedded == PtrKind::kValid) {
      auto* w = reinterpret_cast<u64*>(t_scratch->array);
      std::fill(w, w + words, u64{0});
      w[0] = mode != 2 && r.OneIn(8) ? 0 : 1 + r.Below(3);
      if (w[0] == 0) {
        c.must_fail = true;
        c.defect = "a CPU bitmap naming no CPU";
      }
    } else if (!Readable(c.embedded)) {
      c.must_fail = true;
      c.defect = "an unreadable CPU bitmap";
    }
  }
  if (mode == 2 || (mode == 1 && !r.OneIn(4))) return;
  switch (r.Below(11)) {
    case 0: in->half_bytes = uint32_t(r.Edgy()); break;
    case 1: in->frequency_hz = uint32_t(r.Edgy()); break;
    case 2: in->event_type = uint32_t(r.Below(8)); in->event_period = r.Edgy(); in->event_config = r.Edgy(); break;
    case 3: in->flags = uint32_t(r.Edgy()) | 4; c.must_fail = true; c.defect = "unknown flags"; break;
    case 4: in->half_bytes = TPROF_SAMPLING_MAX_HALF_BYTES * 2; c.must_fail = true; c.defect = "half_bytes > max"; break;
    case 5: in->half_bytes = 4096 + 8; c.must_fail = true; c.defect = "half_bytes not a power of two"; break;
    case 6: in->frequency_hz = TPROF_SAMPLING_MAX_HZ + 1; in->event_type = 0; c.must_fail = true; c.defect = "frequency > max"; break;
    case 7:
      in->stack_depth = r.OneIn(2) ? TPROF_MAX_STACK_DEPTH + 1 + uint32_t(r.Below(100)) : 1 + uint32_t(r.Below(100));
      in->flags |= r.OneIn(2) ? 0 : TPROF_SAMPLING_STACKS;
      c.must_fail = !(in->flags & TPROF_SAMPLING_STACKS) || in->stack_depth > TPROF_MAX_STACK_DEPTH;
      c.defect = "stack_depth";
      break;
    case 8: in->__pad2 = 1 + uint32_t(r.Below(100)); c.must_fail = true; c.defect = "__pad2"; break;
    case 9:
      in->cpus_bytes = r.Pick<uint32_t>({4, 12, TPROF_SAMPLING_MAX_CPUS_BYTES + 8});
      if (!in->cpus) in->cpus = u64(uintptr_t(t_scratch->array));
      c.must_fail = true;
      c.defect = "cpus_bytes";
      break;
    default: MaybeDefectReserved(r, c, in->resv, sizeof(in->resv), "resv"); break;
  }
  if (r.OneIn(4))  // output fields are ignored on input
    for (size_t k = offsetof(tprof_sampling_config, nr_cpu_ids); k < offsetof(tprof_sampling_config, cpus); ++k)
      reinterpret_cast<unsigned char*>(in)[k] = static_cast<unsigned char>(r.Next());
}
void FillSamplingStart(Rng& r, Worker&, void* a, Call& c) {
  FillSamplingConfig(r, static_cast<tprof_sampling_config*>(a), c, 0);
}
bool IsPow2(u64 v) { return v && !(v & (v - 1)); }
void CheckSamplingConfigOut(const char* what, const tprof_sampling_config* in, const tprof_sampling_config* out) {
  if (!IsPow2(out->half_bytes_out) || out->half_bytes_out < TPROF_SAMPLING_MIN_HALF_BYTES ||
      out->half_bytes_out > TPROF_SAMPLING_MAX_HALF_BYTES || out->nr_cpu_ids == 0 ||
      out->ctl_bytes % uint32_t(kPage) || out->ctl_bytes < out->nr_cpu_ids * sizeof(tprof_buffer_ctl) ||
      out->map_bytes != out->ctl_bytes + u64(out->nr_cpu_ids) * 2 * out->half_bytes_out ||
      !AllZero(out->resv, sizeof(out->resv)))
    VIOLATION("%s: inconsistent layout: nr_cpu_ids %u ctl %u map %llu half %u resv %d", what,
              out->nr_cpu_ids, out->ctl_bytes, out->map_bytes, out->half_bytes_out,
              !AllZero(out->resv, sizeof(out->resv)));
  if (in->half_bytes && out->half_bytes_out != in->half_bytes)
    VIOLATION("%s: asked for %u-byte halves, got %u", what, in->half_bytes, out->half_bytes_out);
  if (in->event_type == TPROF_SAMPLE_ON_CLOCK &&
      (out->frequency_out == 0 || out->frequency_out > TPROF_SAMPLING_MAX_HZ))
    VIOLATION("%s: frequency_out %u", what, out->frequency_out);
  if (g_unpriv && in->pid == TPROF_PID_ALL) VIOLATION("%s: system-wide sampling started unprivileged", what);
  if (g_unpriv && in->pid != 0 && !IsOwnPid(in->pid))
    VIOLATION("%s: unprivileged sampling of process %u (not its own) started", what, in->pid);
  CheckNoKernelPointers(what, out, {U64F(tprof_sampling_config, map_bytes), U64F(tprof_sampling_config, resv)});
}
void CheckSamplingStart(Worker&, const void* i, const void* o, const Call&) {
  CheckSamplingConfigOut("SAMPLING_START", static_cast<const tprof_sampling_config*>(i),
                         static_cast<const tprof_sampling_config*>(o));
}
void FillRelease(Rng& r, Worker&, void* a, Call& c) {
  auto* in = static_cast<tprof_buffer_release*>(a);
  *in = {};
  in->cpu = uint32_t(r.OneIn(4) ? r.Edgy() : r.Below(4));
  in->half = uint32_t(r.OneIn(4) ? r.Edgy() : r.Below(2));
  MaybeDefectReserved(r, c, in->resv, sizeof(in->resv), "resv");
}
void CheckSamplingStatus(Worker&, const void*, const void* o, const Call&) {
  auto* out = static_cast<const tprof_sampling_status*>(o);
  if (out->active > 1 || out->running > 1 || (out->running && !out->active) ||
      out->lost_samples > out->samples_taken || !AllZero(out->resv, sizeof(out->resv)))
    VIOLATION("SAMPLING_STATUS: active %u running %u taken %llu lost %llu resv %d",
              out->active, out->running, out->samples_taken, out->lost_samples,
              !AllZero(out->resv, sizeof(out->resv)));
  CheckNoKernelPointers("SAMPLING_STATUS", out, {U64F(tprof_sampling_status, samples_taken), U64F(tprof_sampling_status, lost_samples),
                                                 U64F(tprof_sampling_status, lost_records), U64F(tprof_sampling_status, resv)});
}

// -- windows
extern "C" __attribute__((noinline)) void tprof_fuzz_spin(int n) {
  volatile u64 x = 0;
  for (int i = 0; i < n; ++i) x = x + u64(i);
}
void FillWindowAdd(Rng& r, Worker&, void* a, Call& c) {
  auto* in = static_cast<tprof_window_add*>(a);
  std::memset(in, 0, sizeof(*in));
  in->kind = uint32_t(r.OneIn(10) ? r.Edgy() : 1 + r.Below(3));
  u64 code = u64(uintptr_t(&tprof_fuzz_spin)) & ~0xfffULL;
  switch (in->kind) {
    case TPROF_WINDOW_KERNEL:
      in->start = r.OneIn(4) ? r.Edgy() : 0xffffffff81000000ULL;
      in->length = r.OneIn(4) ? r.Edgy() : 1ULL << (12 + r.Below(12));
      in->block_bytes = uint32_t(r.OneIn(4) ? r.Edgy() : 1ULL << (2 + r.Below(12)));
      if (r.OneIn(6)) in->pid = 1 + uint32_t(r.Below(100));
      break;
    case TPROF_WINDOW_PROCESS:
      in->pid = r.OneIn(3) ? RandomPid(r) : 0;
      in->start = r.OneIn(4) ? r.Edgy() : code;
      in->length = r.OneIn(4) ? r.Edgy() : 1ULL << (8 + r.Below(12));
      in->block_bytes = uint32_t(r.OneIn(4) ? r.Edgy() : 1ULL << (2 + r.Below(10)));
      break;
    case TPROF_WINDOW_PROFIL:
      in->pid = r.OneIn(3) ? RandomPid(r) : 0;
      in->start = r.OneIn(4) ? r.Edgy() : code;
      in->length = r.OneIn(4) ? r.Edgy() : 2 * (1 + r.Below(8192));
      in->scale = uint32_t(r.OneIn(4) ? r.Edgy() : r.Pick<u64>({0, 1, 2, 0x4000, 0x8000, 0x10000, 0x10001}));
      if (r.OneIn(3)) in->flags = TPROF_WINDOW_CELLS32;
      break;
    default:
      c.must_fail = true;
      c.defect = "unknown window kind";
  }
  // (profil accepts bufsiz 0: a window of no cells; the header's "length 0"
  // rule is read as the address windows' rule)
  if (in->length == 0 && in->kind != TPROF_WINDOW_PROFIL) { c.must_fail = true; c.defect = "length 0"; }
  // A range may end exactly at 2^64 (the kernel's top page): [start, 0) does not wrap.
  if (in->length && in->start + (in->length - 1) < in->start && in->kind != TPROF_WINDOW_PROFIL) {
    c.must_fail = true;
    c.defect = "wrapping range";
  }
  if (r.OneIn(8)) { in->flags |= 0x4u << r.Below(29); c.must_fail = true; c.defect = "unknown flags"; }
  if (r.OneIn(10)) { in->__pad = 1; c.must_fail = true; c.defect = "__pad"; }
  MaybeDefectReserved(r, c, in->resv, sizeof(in->resv), "resv");
}
void CheckWindowInfo(const char* what, const tprof_window_info& w) {
  if (w.id >= TPROF_MAX_WINDOWS || (w.cell_bytes != 2 && w.cell_bytes != 4) ||
      w.nr_cells > TPROF_WINDOW_MAX_CELLS || w.kind < 1 || w.kind > 3 || !AllZero(w.resv, sizeof(w.resv)))
    VIOLATION("%s: window id %u kind %u cells %llu x %u resv %d", what, w.id, w.kind,
              w.nr_cells, w.cell_bytes, !AllZero(w.resv, sizeof(w.resv)));
  if (g_unpriv && (w.kind == TPROF_WINDOW_KERNEL || !IsOwnPid(w.pid)))
    VIOLATION("%s: unprivileged caller sees a window of kind %u on pid %u", what, w.kind, w.pid);
  // start and length echo what the caller gave.
  CheckNoKernelPointers(what, &w, {U64F(tprof_window_info, nr_cells), U64F(tprof_window_info, in_range),
                                   U64F(tprof_window_info, out_of_range), U64F(tprof_window_info, wait),
                                   U64F(tprof_window_info, untracked_forks), U64F(tprof_window_info, resv)});
}
void CheckWindowAdd(Worker&, const void* i, const void* o, const Call&) {
  auto* in = static_cast<const tprof_window_add*>(i);
  auto* out = static_cast<const tprof_window_add*>(o);
  if (out->id >= TPROF_MAX_WINDOWS || (out->cell_bytes != 2 && out->cell_bytes != 4) ||
      out->nr_cells > TPROF_WINDOW_MAX_CELLS || out->__pad || !AllZero(out->resv, sizeof(out->resv)))
    VIOLATION("WINDOW_ADD: id %u cells %llu x %u", out->id, out->nr_cells, out->cell_bytes);
  if (g_unpriv && in->kind == TPROF_WINDOW_KERNEL) VIOLATION("WINDOW_ADD: kernel window added unprivileged");
  if (g_unpriv && in->pid && !IsOwnPid(in->pid))
    VIOLATION("WINDOW_ADD: unprivileged window on process %u (not its own)", in->pid);
}
void FillWindowRead(Rng& r, Worker&, void* a, Call& c) {
  auto* in = static_cast<tprof_window_read*>(a);
  std::memset(in, 0, sizeof(*in));
  in->id = uint32_t(r.OneIn(5) ? r.Edgy() : r.Below(TPROF_MAX_WINDOWS));
  in->capacity = r.OneIn(6) ? r.Edgy() : r.Below(5000);
  in->first = r.OneIn(4) ? r.Edgy() : r.Below(100);
  if (in->capacity || r.OneIn(2)) in->cells = EmbeddedPtr(r, c, 4, in->capacity);
  if (r.OneIn(8)) { in->flags = 1u << r.Below(32); c.must_fail = true; c.defect = "unknown flags"; }
  if (r.OneIn(4))
    for (size_t k = offsetof(tprof_window_read, info); k < offsetof(tprof_window_read, resv); ++k)
      reinterpret_cast<unsigned char*>(in)[k] = static_cast<unsigned char>(r.Next());
  MaybeDefectReserved(r, c, in->resv, sizeof(in->resv), "resv");
}
void CheckWindowRead(Worker&, const void* i, const void* o, const Call& c) {
  auto* in = static_cast<const tprof_window_read*>(i);
  auto* out = static_cast<const tprof_window_read*>(o);
  CheckWindowInfo("WINDOW_READ", out->info);
  if (out->info.id != in->id) VIOLATION("WINDOW_READ of id %u returned id %u", in->id, out->info.id);
  u64 avail = in->first < out->info.nr_cells ? out->info.nr_cells - in->first : 0;
  u64 want = in->cells ? std::min<u64>(in->capacity, avail) : 0;  // cells 0: the info only
  if (out->copied != want)
    VIOLATION("WINDOW_READ: copied %llu, expected min(capacity %llu, cells %llu"
              " - first %llu)", out->copied, in->capacity, out->info.nr_cells, in->first);
  if (c.embedded_used && c.embedded != PtrKind::kValid && out->copied > 0 && !Writable(c.embedded))
    VIOLATION("WINDOW_READ: copied %llu cells to a %s pointer and succeeded", out->copied,
              PtrKindName(c.embedded));
  if (in->cells == u64(uintptr_t(t_scratch->array)) && out->copied <= c.embedded_bytes)
    CheckArrayCanary("WINDOW_READ cells", size_t(out->copied) * out->info.cell_bytes);
  if (!AllZero(out->resv, sizeof(out->resv))) VIOLATION("WINDOW_READ: reserved output nonzero");
}
void FillWindowList(Rng& r, Worker&, void* a, Call& c) {
  auto* in = static_cast<tprof_window_list*>(a);
  std::memset(in, 0, sizeof(*in));
  in->capacity = uint32_t(r.OneIn(6) ? r.Edgy() : r.Below(20));
  if (in->capacity || r.OneIn(2)) in->windows = EmbeddedPtr(r, c, sizeof(tprof_window_info), in->capacity);
  if (r.OneIn(4)) in->count = uint32_t(r.Next());
  MaybeDefectReserved(r, c, in->resv, sizeof(in->resv), "resv");
}
void CheckWindowList(Worker&, const void* i, const void* o, const Call& c) {
  auto* in = static_cast<const tprof_window_list*>(i);
  auto* out = static_cast<const tprof_window_list*>(o);
  if (out->count > TPROF_MAX_WINDOWS) VIOLATION("WINDOW_LIST: count %u", out->count);
  uint32_t n = std::min(in->capacity, out->count);
  if (c.embedded_used && c.embedded != PtrKind::kValid && n > 0 && !Writable(c.embedded))
    VIOLATION("WINDOW_LIST: wrote %u windows to a %s pointer and succeeded", n, PtrKindName(c.embedded));
  if (in->windows == u64(uintptr_t(t_scratch->array))) {
    auto* w = reinterpret_cast<const tprof_window_info*>(t_scratch->array);
    std::set<uint32_t> ids;
    for (uint32_t k = 0; k < n; ++k) {
      CheckWindowInfo("WINDOW_LIST", w[k]);
      if (!ids.insert(w[k].id).second) VIOLATION("WINDOW_LIST: id %u twice", w[k].id);
    }
    CheckArrayCanary("WINDOW_LIST windows", size_t(n) * sizeof(tprof_window_info));
  }
}


// -- PMU programs
volatile u64 g_pmu_word;
// A PMU program: mostly valid (software events, a breakpoint on the spin
// routine, a watchpoint, a tracepoint id, rules and thresholds), sometimes
// broken in one documented way.
void FillPmuCreate(Rng& r, Worker&, void* a, Call& c) {
  auto* in = static_cast<tprof_pmu_program*>(a);
  std::memset(in, 0, sizeof(*in));
  in->scope = r.OneIn(2) ? TPROF_PMU_SCOPE_THREAD : TPROF_PMU_SCOPE_PROCESS;
  in->pid = r.OneIn(4) ? (in->scope == TPROF_PMU_SCOPE_THREAD ? RandomTid(r) : RandomPid(r)) : 0;
  if (r.OneIn(6)) {  // every CPU: no target, CAP_PERFMON only
    in->scope = TPROF_PMU_SCOPE_CPUS;
    in->pid = 0;
    if (g_unpriv) { c.must_fail = true; c.defect = "every-CPU program unprivileged"; }
  }
  in->nr_counters = 1 + uint32_t(r.Below(TPROF_PMU_MAX_COUNTERS));
  for (uint32_t i = 0; i < in->nr_counters; ++i) {
    tprof_pmu_counter& k = in->counters[i];
    switch (r.Below(6)) {
      case 0: k.kind = TPROF_PMU_EV_BREAKPOINT; k.addr = u64(uintptr_t(&tprof_fuzz_spin)); break;
      case 1:
        k.kind = TPROF_PMU_EV_WATCHPOINT; k.addr = u64(uintptr_t(&g_pmu_word)); k.len = 8;
        k.flags = r.OneIn(2) ? TPROF_PMU_CTR_WATCH_WRITE : TPROF_PMU_CTR_WATCH_READ;
        break;
      case 2: k.kind = TPROF_PMU_EV_TRACEPOINT; k.config = r.Below(2000); break;
      case 3: k.kind = TPROF_PMU_EV_HARDWARE; k.config = r.Below(10); k.period = r.Pick<u64>({1, 1000, 100000}); break;
      default: k.kind = TPROF_PMU_EV_SOFTWARE; k.config = r.Pick<u64>({2, 3, 4, 5, 6}); break;
    }
    if (r.OneIn(3)) {
      k.flags |= TPROF_PMU_CTR_RANGE;
      k.range_start = u64(uintptr_t(&tprof_fuzz_spin));
      k.range_end = k.range_start + 64 + r.Below(4096);
    }
    if (r.OneIn(3)) {
      k.threshold = 1 + r.Below(1000);
      if (r.OneIn(2)) k.threshold_every = 1 + r.Below(100);
    }
    if (r.OneIn(8)) k.flags |= TPROF_PMU_CTR_USER_ONLY;
    if (k.flags & TPROF_PMU_CTR_RANGE && r.OneIn(3))
      k.nr_subranges = 2 + uint32_t(r.Below(k.range_end - k.range_start - 1));
  }
  in->nr_rules = uint32_t(r.Below(TPROF_PMU_MAX_RULES + 1));
  for (uint32_t i = 0; i < in->nr_rules; ++i) {
    tprof_pmu_rule& rule = in->rules[i];
    rule.nr_terms = 1 + uint32_t(r.Below(TPROF_PMU_MAX_TERMS));
    rule.op = TPROF_PMU_OP_GT + uint32_t(r.Below(4));
    rule.rearm = uint32_t(r.Below(2));
    rule.constant = int64_t(r.Below(2000)) - 1000;
    for (uint32_t t = 0; t < rule.nr_terms; ++t) {
      rule.terms[t].counter = uint32_t(r.Below(in->nr_counters));
      rule.terms[t].multiplier = r.OneIn(2) ? 1 + int64_t(r.Below(5)) : -1 - int64_t(r.Below(5));
    }
  }
  for (uint32_t i = 0; i < in->nr_counters && in->nr_rules; ++i)  // secondaries
    if (r.OneIn(4)) in->counters[i].armed_by = 1 + uint32_t(r.Below(in->nr_rules));
  tprof_pmu_counter& c0 = in->counters[0];
  tprof_pmu_rule& r0 = in->rules[0];
  switch (r.Below(25)) {
    case 24: {  // ABI 1.14: counts only (perf stat's counters), half with one thing it refuses;
                // in scope CPUS too (1.15: summed over the CPUs, root only)
      in->nr_rules = 0;
      std::memset(in->rules, 0, sizeof(in->rules));
      for (uint32_t i = 0; i < in->nr_counters; ++i) {
        tprof_pmu_counter& k = in->counters[i];
        k = {};
        k.flags = TPROF_PMU_CTR_COUNT | (r.OneIn(8) ? TPROF_PMU_CTR_USER_ONLY : 0);
        switch (r.Below(3)) {
          case 0: k.kind = TPROF_PMU_EV_HARDWARE; k.config = r.Below(10); break;
          case 1: k.kind = TPROF_PMU_EV_TRACEPOINT; k.config = r.Below(2000); break;
          default:
            k.kind = TPROF_PMU_EV_SOFTWARE;
            k.config = r.Pick<u64>({0, 1, 2, 3, 4, 5, 6});  // the clocks too
            break;
        }
      }
      if (r.OneIn(2)) break;  // valid
      switch (r.Below(5)) {
        case 0: c0.period = 1 + r.Below(100000); break;
        case 1: c0.threshold = 1 + r.Below(100); break;
        case 2:
          c0.flags |= TPROF_PMU_CTR_RANGE;
          c0.range_start = u64(uintptr_t(&tprof_fuzz_spin));
          c0.range_end = c0.range_start + 64;
          break;
        case 3:
          c0 = {};
          c0.kind = TPROF_PMU_EV_BREAKPOINT;
          c0.flags = TPROF_PMU_CTR_COUNT;
          c0.addr = u64(uintptr_t(&tprof_fuzz_spin));
          break;
        default:  // a rule reading it
          in->nr_rules = 1;
          r0.nr_terms = 1;
          r0.op = TPROF_PMU_OP_GE;
          r0.rearm = TPROF_PMU_REARM_ONCE;
          r0.constant = 1;
          r0.terms[0].counter = 0;
          r0.terms[0].multiplier = 1;
          break;
      }
      c.must_fail = true; c.defect = "counts only";
      break;
    }
    case 13:
      c0 = {};
      c0.kind = TPROF_PMU_EV_WATCHPOINT;
      c0.flags = TPROF_PMU_CTR_WATCH_WRITE;
      c0.addr = u64(uintptr_t(&g_pmu_word));
      // ABI 1.10: 1..32 bytes at any address, if it fits 4 debug registers.
      // An unaligned 32-byte range needs more than 4 pieces on x86 and arm64.
      if (r.OneIn(2)) c0.len = r.Pick<u64>({0, TPROF_PMU_MAX_WATCH_LEN + 1, 64, 4096});
      else { c0.len = TPROF_PMU_MAX_WATCH_LEN; c0.addr += 1 + r.Below(7); }
      c.must_fail = true; c.defect = "watchpoint length or pieces";
      break;
    case 14:
      c0 = {};
      c0.kind = r.Pick<uint32_t>({TPROF_PMU_EV_SOFTWARE, TPROF_PMU_EV_BREAKPOINT, TPROF_PMU_EV_TRACEPOINT});
      c0.config = c0.kind == TPROF_PMU_EV_SOFTWARE ? 2 : c0.kind == TPROF_PMU_EV_TRACEPOINT ? 1 : 0;
      c0.addr = c0.kind == TPROF_PMU_EV_BREAKPOINT ? u64(uintptr_t(&tprof_fuzz_spin)) : 0;
      c0.period = 2 + r.Below(1000);
      c.must_fail = true; c.defect = "period above 1 for an exact kind";
      break;
    case 15:
      c0 = {};
      c0.kind = r.OneIn(2) ? TPROF_PMU_EV_HARDWARE : TPROF_PMU_EV_RAW;
      c0.config = 1;
      c.must_fail = true; c.defect = "hardware counter without a period";
      break;
    case 16:
      c0.threshold = 0;
      c0.threshold_every = 1 + r.Below(10);
      c.must_fail = true; c.defect = "threshold_every without a threshold";
      break;
    case 17:
    case 18: {
      if (!in->nr_rules) {
        in->nr_rules = 1;
        r0.nr_terms = 1;
        r0.op = TPROF_PMU_OP_GT;
        r0.terms[0].multiplier = 1;
      }
      switch (r.Below(6)) {
        case 0: r0.nr_terms = r.OneIn(2) ? 0 : TPROF_PMU_MAX_TERMS + 1 + uint32_t(r.Below(10)); break;
        case 1: r0.op = r.OneIn(2) ? 0 : TPROF_PMU_OP_LE + 1 + uint32_t(r.Below(10)); break;
        case 2: r0.rearm = TPROF_PMU_REARM_ON_FALSE + 1 + uint32_t(r.Below(10)); break;
        case 3: r0.terms[0].multiplier = 0; break;
        case 4: r0.resv[r.Below(2)] = 1 + r.Below(100); break;
        default:
          if (r0.nr_terms >= TPROF_PMU_MAX_TERMS) r0.nr_terms = TPROF_PMU_MAX_TERMS - 1;
          r0.terms[r0.nr_terms].multiplier = 1;  // a term past nr_terms
          break;
      }
      c.must_fail = true; c.defect = "rule";
      break;
    }
    case 19:
      if (in->nr_counters < TPROF_PMU_MAX_COUNTERS) {
        in->counters[in->nr_counters].kind = TPROF_PMU_EV_SOFTWARE;
        c.must_fail = true; c.defect = "a counter slot past nr_counters";
      }
      break;
    case 20: in->nr_rules = TPROF_PMU_MAX_RULES + 1 + uint32_t(r.Below(100)); c.must_fail = true; c.defect = "nr_rules"; break;
    case 21:
      c0.flags |= TPROF_PMU_CTR_RANGE;
      c0.range_start = u64(uintptr_t(&tprof_fuzz_spin));
      c0.range_end = c0.range_start + 1 + r.Below(16);
      c0.nr_subranges = uint32_t(c0.range_end - c0.range_start) + 1 + uint32_t(r.Below(100));
      c.must_fail = true; c.defect = "more subranges than range bytes";
      break;
    case 0: in->nr_counters = TPROF_PMU_MAX_COUNTERS + 1 + uint32_t(r.Below(100)); c.must_fail = true; c.defect = "nr_counters"; break;
    case 1: in->flags = 1 + uint32_t(r.Below(100)); c.must_fail = true; c.defect = "flags"; break;
    case 2: in->scope = 4 + uint32_t(r.Below(100)); c.must_fail = true; c.defect = "scope"; break;
    case 12:
      in->scope = TPROF_PMU_SCOPE_CPUS;
      in->pid = RandomPid(r);
      if (in->pid == 0) in->pid = 1 + uint32_t(r.Below(100000));
      c.must_fail = true; c.defect = "every-CPU program with a pid";
      break;
    case 3: in->counters[0].kind = 7 + uint32_t(r.Below(100)); c.must_fail = true; c.defect = "kind"; break;
    case 4:
      in->counters[0].flags |= TPROF_PMU_CTR_RANGE;
      in->counters[0].range_end = in->counters[0].range_start;
      c.must_fail = true; c.defect = "empty range";
      break;
    case 5:
      if (in->nr_rules) {
        in->rules[0].terms[0].multiplier = TPROF_PMU_MAX_MULTIPLIER + 1 + int64_t(r.Below(100));
        c.must_fail = true; c.defect = "multiplier";
      }
      break;
    case 6:
      if (in->nr_rules) {
        in->rules[0].terms[0].counter = in->nr_counters + uint32_t(r.Below(100));
        c.must_fail = true; c.defect = "term counter";
      }
      break;
    case 7: MaybeDefectReserved(r, c, in->resv, sizeof(in->resv), "resv"); break;
    case 8: MaybeDefectReserved(r, c, in->counters[0].resv, sizeof(in->counters[0].resv), "counter resv"); break;
    case 10:
      in->counters[0].armed_by = in->nr_rules + 1 + uint32_t(r.Below(10));
      c.must_fail = true; c.defect = "armed_by names no rule";
      break;
    case 11:
      in->counters[0].nr_subranges = r.OneIn(2) ? 1 : TPROF_PMU_MAX_SUBRANGES + 1;
      c.must_fail = true; c.defect = "nr_subranges";
      break;
    case 22: {  // ABI 1.11: a data range on a page-fault counter, any length
      c0 = {};
      c0.kind = TPROF_PMU_EV_SOFTWARE;
      c0.config = r.Pick<u64>({u64(PERF_COUNT_SW_PAGE_FAULTS), u64(PERF_COUNT_SW_PAGE_FAULTS_MIN),
                               u64(PERF_COUNT_SW_PAGE_FAULTS_MAJ)});
      c0.flags = TPROF_PMU_CTR_DATA_RANGE;
      c0.addr = u64(uintptr_t(t_scratch)) & ~u64(4095);
      c0.len = 1 + r.Below(u64(1) << 30);
      if (r.OneIn(3)) c0.threshold = 1 + r.Below(100);
      if (r.OneIn(4)) { c0.nr_subranges = 2 + uint32_t(r.Below(64)); c0.len += 64; }
      if (r.OneIn(5)) {  // kernel data: CAP_PERFMON only
        c0.addr = 0xffff800000000000ULL;
        if (g_unpriv) { c.must_fail = true; c.defect = "kernel data range unprivileged"; }
      }
      break;
    }
    case 23:  // a data range the module must refuse (EINVAL)
      c0 = {};
      c0.kind = TPROF_PMU_EV_SOFTWARE;
      c0.config = PERF_COUNT_SW_PAGE_FAULTS;
      c0.flags = TPROF_PMU_CTR_DATA_RANGE;
      c0.addr = u64(uintptr_t(t_scratch));
      c0.len = 4096;
      switch (r.Below(4)) {
        case 0: c0.len = 0; break;
        case 1: c0.addr = ~u64(0) - r.Below(100); c0.len = 200; break;  // wraps
        case 2: c0.config = r.Pick<u64>({0, 1, 3, 7}); break;          // no data address
        default:
          c0.kind = TPROF_PMU_EV_WATCHPOINT;
          c0.config = 0;
          c0.len = 8;
          c0.flags |= TPROF_PMU_CTR_WATCH_WRITE;
          break;
      }
      c.must_fail = true; c.defect = "data range";
      break;
    case 9:  // a kernel address: CAP_PERFMON only
      in->counters[0] = {};
      in->counters[0].kind = TPROF_PMU_EV_BREAKPOINT;
      in->counters[0].addr = 0xffffffff81000000ULL;
      if (g_unpriv) { c.must_fail = true; c.defect = "kernel breakpoint unprivileged"; }
      break;
    default: break;
  }
  if (r.OneIn(4)) in->fd = int32_t(r.Next());  // output: ignored on input
}
uint64_t t_scratch_capacity(uint32_t salt) {
  // 0, a few, or as many as the scratch array holds (with its canary).
  static const uint64_t caps[] = {0, 1, 3, 64, (sizeof(t_scratch->array) - kCanary) / sizeof(u64)};
  return caps[(salt * 7 + uint32_t(::getpid())) % 5];
}
void CheckPmuCreate(Worker&, const void* i, const void* o, const Call&) {
  auto* in = static_cast<const tprof_pmu_program*>(i);
  auto* out = static_cast<const tprof_pmu_program*>(o);
  if (out->fd < 0) {
    VIOLATION("PMU_CREATE succeeded with fd %d", out->fd);
    return;
  }
  if (g_unpriv && in->pid && !IsOwnPid(in->pid) && in->scope == TPROF_PMU_SCOPE_PROCESS)
    VIOLATION("PMU_CREATE: unprivileged program on process %u (not its own)", in->pid);
  if (g_unpriv && in->scope == TPROF_PMU_SCOPE_CPUS)
    VIOLATION("PMU_CREATE: unprivileged every-CPU program");
  // Count a little, read the values, then close (ends the program).
  for (int k = 0; k < 3; ++k) {
    tprof_fuzz_spin(10);
    g_pmu_word = g_pmu_word + 1;
  }
  tprof_pmu_values v;
  std::memset(&v, 0xa5, sizeof(v));
  if (::ioctl(out->fd, TPROF_IOC_PMU_READ, &v) != 0) {
    VIOLATION("PMU_READ on a fresh program: %s", ErrName(errno).c_str());
  } else {
    if (v.nr_counters != in->nr_counters || !AllZero(v.resv, sizeof(v.resv)) ||
        v.events_sent > v.events_queued)
      VIOLATION("PMU_READ: nr_counters %u (want %u), sent %llu > queued %llu, resv %d", v.nr_counters,
                in->nr_counters, v.events_sent, v.events_queued, !AllZero(v.resv, sizeof(v.resv)));
    for (uint32_t k = v.nr_counters; k < TPROF_PMU_MAX_COUNTERS; ++k)
      if (v.values[k] || v.threshold_fired[k]) VIOLATION("PMU_READ: unused counter %u nonzero", k);
    CheckNoKernelPointers("PMU_READ", &v, {U64F(tprof_pmu_values, values), U64F(tprof_pmu_values, events_lost),
                                           U64F(tprof_pmu_values, hits_missed)});
  }
  // Each counter's subranges, into a canaried array of a random capacity.
  for (uint32_t k = 0; k < in->nr_counters + 1; ++k) {
    tprof_pmu_subranges sr{};
    sr.counter = k;
    sr.capacity = uint32_t(t_scratch_capacity(k));
    sr.values = u64(uintptr_t(t_scratch->array));
    std::memset(t_scratch->array, kCanaryByte, sizeof(t_scratch->array));
    int err = ::ioctl(out->fd, TPROF_IOC_PMU_READ_SUBRANGES, &sr) == 0 ? 0 : errno;
    bool has = k < in->nr_counters && in->counters[k].nr_subranges;
    if (has != (err == 0))
      VIOLATION("PMU_READ_SUBRANGES counter %u (nr_subranges %u): %s", k,
                k < in->nr_counters ? in->counters[k].nr_subranges : 0, ErrName(err).c_str());
    if (!err) {
      if (sr.nr_subranges != in->counters[k].nr_subranges || sr.width == 0)
        VIOLATION("PMU_READ_SUBRANGES: K %u (want %u), width %llu", sr.nr_subranges,
                  in->counters[k].nr_subranges, sr.width);
      CheckArrayCanary("PMU_READ_SUBRANGES values", std::min(sr.capacity, sr.nr_subranges) * sizeof(u64));
    }
  }
  if (::ioctl(out->fd, TPROF_IOC_PMU_READ, 8) == 0 || errno != EFAULT)
    VIOLATION("PMU_READ to an unmapped pointer: %s", ErrName(errno).c_str());
  if (::ioctl(out->fd, TPROF_IOC_GET_INFO, t_scratch->array) == 0 || errno != ENOTTY)
    VIOLATION("GET_INFO on a program descriptor: %s, want ENOTTY", ErrName(errno).c_str());
  ::close(out->fd);
}

// The table. Errnos: the uapi header's per-ioctl lists; every ioctl may also
// fail with EFAULT and EINVAL. ENOMEM is listed where the ioctl allocates.
const std::vector<IoctlSpec> kIoctls = {
    {"GET_INFO", TPROF_IOC_GET_INFO, {}, false, FillInfo, CheckInfo},
    {"METRICS_ENABLE", TPROF_IOC_METRICS_ENABLE, {EPERM, EOPNOTSUPP, ENOMEM}, true, FillMetricsEnable, CheckNothing},
    {"METRICS_DISABLE", TPROF_IOC_METRICS_DISABLE, {EPERM}, true, FillNone, CheckNothing},
    {"METRICS_STATUS", TPROF_IOC_METRICS_STATUS, {}, false, FillZero, CheckMetricsStatus},
    {"THREAD_READ", TPROF_IOC_THREAD_READ, {EACCES, ESRCH, ENODATA}, false, FillThreadRead, CheckThreadRead},
    {"DRAIN", TPROF_IOC_DRAIN, {EPERM, EACCES, ESRCH, ENODATA}, false, FillDrain, CheckDrain},
    {"READ_SELF", TPROF_IOC_READ_SELF, {ENODATA, ESRCH}, false, FillZero, CheckReadSelf},
    {"SAMPLING_START", TPROF_IOC_SAMPLING_START, {EPERM, EACCES, ESRCH, EBUSY, EOPNOTSUPP, ENOMEM, E2BIG}, false, FillSamplingStart, CheckSamplingStart},
    {"SAMPLING_STOP", TPROF_IOC_SAMPLING_STOP, {EPERM, ENODATA}, false, FillNone, CheckNothing},
    {"SAMPLING_RELEASE", TPROF_IOC_SAMPLING_RELEASE, {ENODATA, EPERM}, false, FillRelease, CheckNothing},
    {"SAMPLING_STATUS", TPROF_IOC_SAMPLING_STATUS, {}, false, FillZero, CheckSamplingStatus},
    {"WINDOW_ADD", TPROF_IOC_WINDOW_ADD, {EPERM, ENODATA, EACCES, ESRCH, ENOSPC, ENOMEM}, false, FillWindowAdd, CheckWindowAdd},
    {"WINDOW_READ", TPROF_IOC_WINDOW_READ, {EPERM, ENODATA}, false, FillWindowRead, CheckWindowRead},
    {"WINDOW_LIST", TPROF_IOC_WINDOW_LIST, {EPERM, ENODATA}, false, FillWindowList, CheckWindowList},
    {"SAMPLING_STOP_ANY", TPROF_IOC_SAMPLING_STOP_ANY, {EPERM, ENODATA}, true, FillNone, CheckNothing},
    {"SAMPLING_FLUSH", TPROF_IOC_SAMPLING_FLUSH, {EPERM, ENODATA}, false, FillNone, CheckNothing},
    {"PMU_CREATE", TPROF_IOC_PMU_CREATE, {EPERM, EACCES, ESRCH, ENOENT, EOPNOTSUPP, ENOSPC, ENOMEM, E2BIG, EMFILE, kBreakpointBusy}, false, FillPmuCreate, CheckPmuCreate},
};

bool KnownNr(unsigned nr) {
  for (const auto& s : kIoctls)
    if (_IOC_NR(s.cmd) == nr) return true;
  return false;
}

// ioctl(2) returning 0 or an errno; a positive return is reported.
int RawIoctl(const char* name, int fd, unsigned long cmd, void* arg) {
  errno = 0;
  long r = ::ioctl(fd, cmd, arg);
  if (r > 0) VIOLATION("%s returned %ld (ioctls return 0 or -1)", name, r);
  return r == 0 ? 0 : errno;
}

// The input struct as u64 words, for messages.
std::string Hex(const void* p, size_t n) {
  std::string out;
  char w[24];
  for (size_t off = 0; off + 8 <= n; off += 8) {
    u64 v;
    std::memcpy(&v, static_cast<const char*>(p) + off, 8);
    std::snprintf(w, sizeof(w), "%s%llx", off ? " " : "", v);
    out += w;
  }
  return out;
}

// One table-driven call: mostly valid, sometimes broken in one way.
void FuzzIoctl(Worker& w, int fd) {
  Rng& r = w.rng;
  const IoctlSpec* pick = &kIoctls[r.Below(kIoctls.size())];
  // As root a successful METRICS_DISABLE would keep accounting off most of
  // the time, and with it the metric paths: call it a quarter as often.
  while (pick->cmd == TPROF_IOC_METRICS_DISABLE && !g_unpriv && !r.OneIn(4))
    pick = &kIoctls[r.Below(kIoctls.size())];
  // As root, SAMPLING_STOP_ANY would stop the accountant's session under
  // its books: root calls it only in its broken forms (size, direction).
  bool stop_any_broken_only = pick->cmd == TPROF_IOC_SAMPLING_STOP_ANY && !g_unpriv;
  const IoctlSpec& s = *pick;
  t_op = s.name;
  const size_t size = _IOC_SIZE(s.cmd);
  const unsigned dir = _IOC_DIR(s.cmd);

  // Encoding mutations: unknown numbers are ENOTTY, known numbers with
  // another size or direction EINVAL.
  if (stop_any_broken_only || r.OneIn(8)) {
    unsigned long cmd;
    int want;
    std::string what;
    switch (r.Below(4)) {
      case 0: {
        unsigned nr;
        do nr = unsigned(r.Below(256)); while (KnownNr(nr));
        cmd = _IOC(r.Below(4), TPROF_IOC_MAGIC, nr, r.Below(512));
        want = ENOTTY;
        what = "unknown number " + std::to_string(nr);
        break;
      }
      case 1: {
        unsigned magic;
        do magic = unsigned(0xA0 + r.Below(0x50)); while (magic == TPROF_IOC_MAGIC);
        cmd = _IOC(dir, magic, _IOC_NR(s.cmd), size);
        want = ENOTTY;
        what = "another magic";
        break;
      }
      case 2: {
        size_t other;
        do other = r.Pick<size_t>({0, 8, size - 8, size + 8, size * 2, 1, size + 1, 16383}); while (other == size);
        cmd = _IOC(dir, TPROF_IOC_MAGIC, _IOC_NR(s.cmd), other & 0x3fff);
        want = EINVAL;
        what = "size " + std::to_string(other & 0x3fff) + " instead of " + std::to_string(size);
        break;
      }
      default: {
        unsigned other;
        do other = unsigned(r.Below(4)); while (other == dir);
        cmd = _IOC(other, TPROF_IOC_MAGIC, _IOC_NR(s.cmd), size);
        want = EINVAL;
        what = "direction " + std::to_string(other) + " instead of " + std::to_string(dir);
        break;
      }
    }
    std::memset(t_scratch->arg, 0, sizeof(t_scratch->arg));
    int err = RawIoctl(s.name, fd, cmd, t_scratch->arg);
    Count("ioctl encoding " + ErrName(err));
    if (err != want)
      VIOLATION("%s with %s (cmd 0x%lx): %s, documented %s", s.name, what.c_str(), cmd,
                ErrName(err).c_str(), ErrName(want).c_str());
    return;
  }

  Call c;
  unsigned char in[2048];
  std::memset(in, 0, sizeof(in));
  s.fill(r, w, in, c);
  if (r.OneIn(25)) {  // random bytes: only the errno set is checked
    for (size_t i = 0; i < size; ++i) in[i] = static_cast<unsigned char>(r.Next());
    c = Call{};
    c.defect = "random bytes";
  }

  // Where the struct lives.
  PtrKind where = r.OneIn(6) ? RandomBadPtr(r) : (r.OneIn(10) ? PtrKind::kOdd : PtrKind::kValid);
  if (size == 0) where = PtrKind::kValid;
  void* arg;
  unsigned char* buf = t_scratch->arg;
  if (where == PtrKind::kValid || where == PtrKind::kOdd) {
    buf += where == PtrKind::kOdd ? 1 + r.Below(7) : 0;
    std::memset(t_scratch->arg, kCanaryByte, sizeof(t_scratch->arg));
    std::memcpy(buf, in, size);
    arg = buf;
  } else if (where == PtrKind::kStraddle) {
    u64 p = HostilePtr(r, where, size);
    size_t head = size_t(uintptr_t(g_arena.rw_then_none + kPage) - p);
    std::memcpy(reinterpret_cast<void*>(p), in, std::min(head, size));
    arg = reinterpret_cast<void*>(p);
  } else {
    arg = reinterpret_cast<void*>(HostilePtr(r, where, size));
    if (where == PtrKind::kReadOnly) {  // the kernel reads zeros: no defect left in them
      std::memset(in, 0, size);
      c = Call{};
    }
  }
  if (size && ((dir & _IOC_WRITE) && !Readable(where))) {
    c.must_fail = true;
    c.defect = std::string("argument ") + PtrKindName(where) + " (unreadable input)";
  }
  if (size && ((dir & _IOC_READ) && !Writable(where))) {
    c.must_fail = true;
    c.defect = std::string("argument ") + PtrKindName(where) + " (unwritable output)";
  }

  int err = RawIoctl(s.name, fd, s.cmd, arg);
  Count(std::string(s.name) + " " + ErrName(err));

  if (err) {
    bool documented = err == EFAULT || err == EINVAL ||
                      std::find(s.errnos.begin(), s.errnos.end(), err) != s.errnos.end();
    if (!documented)
      VIOLATION("%s failed with %s, not in its documented errno set (argument %s%s%s; input %s)", s.name,
                ErrName(err).c_str(), PtrKindName(where), c.defect.empty() ? "" : ", defect: ",
                c.defect.c_str(), Hex(in, std::min<size_t>(size, 96)).c_str());
    if (g_unpriv && s.privileged_only && err != EPERM && err != EFAULT && err != EINVAL)
      VIOLATION("%s unprivileged failed with %s, expected EPERM", s.name, ErrName(err).c_str());
    if (err == EPERM && !g_unpriv &&
        (s.cmd == TPROF_IOC_METRICS_ENABLE || s.cmd == TPROF_IOC_METRICS_DISABLE || s.cmd == TPROF_IOC_PMU_CREATE))
      VIOLATION("%s refused root with EPERM", s.name);
    return;
  }
  if (c.must_fail)
    VIOLATION("%s succeeded although %s", s.name, c.defect.c_str());
  if (g_unpriv && s.privileged_only) VIOLATION("%s succeeded unprivileged", s.name);
  if (size && (where == PtrKind::kValid || where == PtrKind::kOdd)) {
    const size_t start = size_t(buf - t_scratch->arg) + size;
    for (size_t i = start; i < sizeof(t_scratch->arg) && i < start + 64; ++i)
      if (t_scratch->arg[i] != kCanaryByte) {
        VIOLATION("%s wrote past its %zu-byte argument", s.name, size);
        break;
      }
    if (c.defect != "random bytes") {
      unsigned char out[2048];
      std::memcpy(out, buf, size);
      s.check(w, in, out, c);
    }
  }
}

// ---- records ------------------------------------------------------------------

struct Books {
  std::vector<u64> delivered;    // SAMPLE records per CPU buffer
  std::vector<u64> lost_in_recs; // LOST records' lost_samples per CPU
  std::vector<u64> last_seq;
};

// Checks and counts the records of CPU cpu's half (used bytes).
void ParseHalf(const char* base, uint32_t used, uint32_t half_bytes, uint32_t cpu, Books* books,
               uint32_t session_pid) {
  if (used > half_bytes) {
    VIOLATION("cpu %u: used %u > half_bytes %u", cpu, used, half_bytes);
    return;
  }
  uint32_t off = 0;
  while (off < used) {
    tprof_rec_header h;
    if (used - off < sizeof(h)) {
      VIOLATION("cpu %u: %u trailing bytes in a half", cpu, used - off);
      return;
    }
    std::memcpy(&h, base + off, sizeof(h));
    if (h.size < sizeof(h) || h.size % 8 || h.size > used - off) {
      VIOLATION("cpu %u: record type %u size %u at offset %u of %u used", cpu, h.type, h.size, off, used);
      return;
    }
    const char* p = base + off;
    static const uint32_t kMin[] = {0, sizeof(tprof_rec_sample), sizeof(tprof_rec_comm),
                                    sizeof(tprof_rec_exit), sizeof(tprof_rec_map) + 8,
                                    sizeof(tprof_rec_lost)};
    if (h.type < 1 || h.type > 5 || h.size < kMin[h.type]) {
      VIOLATION("cpu %u: record type %u of size %u", cpu, h.type, h.size);
      return;
    }
    uint32_t pid = 0;
    bool has_pid = true;
    switch (h.type) {
      case TPROF_REC_SAMPLE: {
        tprof_rec_sample s;
        std::memcpy(&s, p, sizeof(s));
        if (s.cpu != cpu) VIOLATION("a sample of cpu %u in cpu %u's buffer", s.cpu, cpu);
        if (s.flags & ~0x1fu) VIOLATION("sample flags 0x%x", s.flags);
        if (s.flags & TPROF_SAMPLE_STACK) {
          // ABI 1.8: the stack fills the record; no kernel frames for a
          // reader without kernel addresses (its user part is the
          // sampled process's own memory, which that reader may read).
          tprof_rec_stack st{};
          if (h.size < sizeof(s) + sizeof(st)) {
            VIOLATION("stack sample of size %u", h.size);
          } else {
            std::memcpy(&st, p + sizeof(s), sizeof(st));
            if (h.size != sizeof(s) + sizeof(st) + 8u * (st.nr_kernel + st.nr_user))
              VIOLATION("stack of %u+%u frames in a record of %u bytes", st.nr_kernel, st.nr_user, h.size);
            if (st.nr_kernel + st.nr_user > TPROF_MAX_STACK_DEPTH + 2 || (st.flags & ~7u))
              VIOLATION("stack of %u+%u frames, flags 0x%x", st.nr_kernel, st.nr_user, st.flags);
            if (g_unpriv && st.nr_kernel) VIOLATION("unprivileged stack with %u kernel frames", st.nr_kernel);
          }
        } else if (h.size != sizeof(s)) {
          VIOLATION("sample of %u bytes without a stack", h.size);
        }
        if ((s.flags & TPROF_SAMPLE_USER) && (s.ip >= kUserEnd))
          VIOLATION("user sample with ip 0x%llx", s.ip);
        if (g_unpriv && !(s.flags & TPROF_SAMPLE_USER) &&
            (s.ip || s.caller || !(s.flags & TPROF_SAMPLE_HIDDEN)))
          VIOLATION("unprivileged kernel sample: ip 0x%llx caller 0x%llx flags 0x%x",
                    s.ip, s.caller, s.flags);
        // space_id is a hash: any value.
        CheckNoKernelPointers("SAMPLE record", &s, {U64F(tprof_rec_sample, time_ns), U64F(tprof_rec_sample, ip),
                                                    U64F(tprof_rec_sample, caller)});
        pid = s.pid;
        if (books) books->delivered[cpu]++;
        // A one-process session follows the children its target creates
        // after start (perf's inherit): those are the fuzzer's own here.
        if (session_pid != TPROF_PID_ALL && s.pid != session_pid &&
            !(IsOwnPid(session_pid) && (IsOwnPidSettled(s.pid) || DescendsFrom(s.pid, session_pid))))
          VIOLATION("a session of pid %u delivered a sample of pid %u (tid %u, flags 0x%x; %s)", session_pid, s.pid,
                    s.tid, s.flags, DescribePid(s.pid).c_str());
        break;
      }
      case TPROF_REC_COMM: {
        tprof_rec_comm m;
        std::memcpy(&m, p, sizeof(m));
        if (m.kind > TPROF_COMM_EXEC) VIOLATION("COMM kind %u", m.kind);
        CheckNoKernelPointers("COMM record", &m, {U64F(tprof_rec_comm, time_ns), U64F(tprof_rec_comm, comm)});
        pid = m.pid;
        break;
      }
      case TPROF_REC_EXIT: {
        tprof_rec_exit e;
        std::memcpy(&e, p, sizeof(e));
        CheckNoKernelPointers("EXIT record", &e, {U64F(tprof_rec_exit, time_ns)});
        pid = e.pid;
        break;
      }
      case TPROF_REC_MAP: {
        tprof_rec_map m;
        std::memcpy(&m, p, sizeof(m));
        if (m.start >= m.end || m.end > kUserEnd)
          VIOLATION("MAP record [0x%llx, 0x%llx)", m.start, m.end);
        if (std::memchr(p + sizeof(m), 0, h.size - sizeof(m)) == nullptr)
          VIOLATION("MAP record path not NUL-terminated");
        CheckNoKernelPointers("MAP record", &m, {U64F(tprof_rec_map, time_ns), U64F(tprof_rec_map, start),
                                                 U64F(tprof_rec_map, end), U64F(tprof_rec_map, pgoff)});
        pid = m.pid;
        break;
      }
      case TPROF_REC_LOST: {
        tprof_rec_lost l;
        std::memcpy(&l, p, sizeof(l));
        if (books) books->lost_in_recs[cpu] += l.lost_samples;
        CheckNoKernelPointers("LOST record", &l, {U64s{8, sizeof(l) - 8}});
        has_pid = false;
        break;
      }
    }
    if (has_pid && g_unpriv && !(h.type == TPROF_REC_SAMPLE && pid == 0) && !IsOwnPidSettled(pid))
      VIOLATION("record type %u of pid %u (not the unprivileged caller's own) delivered", h.type, pid);
    if (has_pid && g_unpriv && h.type == TPROF_REC_SAMPLE && pid == 0)
      VIOLATION("an idle-task sample was delivered to the unprivileged caller's session");
    off += h.size;
  }
}

// Reads every full half of a mapping, parses it and (release) hands it back.
// Returns halves consumed.
int ConsumeHalves(int fd, const char* map, uint32_t nr_cpu, uint32_t ctl_bytes, uint32_t half_bytes,
                  Books* books, uint32_t session_pid, bool release) {
  int n = 0;
  for (uint32_t c = 0; c < nr_cpu; ++c) {
    auto* ctl = reinterpret_cast<const tprof_buffer_ctl*>(map + size_t(c) * sizeof(tprof_buffer_ctl));
    bool full[2] = {__atomic_load_n(&ctl->full[0], __ATOMIC_ACQUIRE) != 0,
                    __atomic_load_n(&ctl->full[1], __ATOMIC_ACQUIRE) != 0};
    // Both full: the older publication first.
    uint32_t order[2] = {0, 1};
    if (full[0] && full[1] && __atomic_load_n(&ctl->seq[1], __ATOMIC_RELAXED) < __atomic_load_n(&ctl->seq[0], __ATOMIC_RELAXED))
      std::swap(order[0], order[1]);
    for (uint32_t h : order) {
      if (!full[h]) continue;
      uint32_t used = __atomic_load_n(&ctl->used[h], __ATOMIC_RELAXED);
      u64 seq = __atomic_load_n(&ctl->seq[h], __ATOMIC_RELAXED);
      if (books) {
        if (seq <= books->last_seq[c] && books->last_seq[c] != ~0ULL && seq != 0)
          VIOLATION("cpu %u: half %u published with seq %llu after seq %llu", c, h, seq,
                    books->last_seq[c]);
        books->last_seq[c] = seq;
      }
      ParseHalf(map + ctl_bytes + (2 * size_t(c) + h) * half_bytes, used, half_bytes, c, books, session_pid);
      if (release) {
        tprof_buffer_release rel{};
        rel.cpu = c;
        rel.half = h;
        int err = RawIoctl("SAMPLING_RELEASE", fd, TPROF_IOC_SAMPLING_RELEASE, &rel);
        if (err && books) VIOLATION("SAMPLING_RELEASE of a full half (cpu %u half %u): %s", c, h, ErrName(err).c_str());
      }
      ++n;
    }
  }
  return n;
}

// ---- operations ---------------------------------------------------------------------

void Burn(u64 ns) {
  u64 end = NowNs() + ns;
  while (NowNs() < end) tprof_fuzz_spin(2000);
}

// kernel.perf_event_paranoid (Debian's kernels default to 3: nothing
// sampled or counted without CAP_PERFMON, EACCES).
int PerfParanoid() {
  static const int level = [] {
    int v = 2;
    if (FILE* f = std::fopen("/proc/sys/kernel/perf_event_paranoid", "r")) {
      if (std::fscanf(f, "%d", &v) != 1) v = 2;
      std::fclose(f);
    }
    return v;
  }();
  return level;
}

std::atomic<bool> g_accountant_busy{false};
// Set while the accountant waits for the one session; shared with the root
// parent of --unprivileged (MAP_SHARED), which then starts none.
std::atomic<int> g_want_session_local{0};
std::atomic<int>* g_want_session = &g_want_session_local;
std::atomic<u64> g_accounts_done{0};

// Ends the sessions of this process's shared descriptors: drops every pool
// descriptor whose file has a session (a one-page mmap at offset 0 is
// EINVAL there, ENODATA without one) and every shared mapping (a mapping
// keeps its file, and so its session, alive).
void EvictSessions() {
  {
    std::lock_guard<std::mutex> l(g_pool_mu);
    for (size_t i = 0; i < g_pool.size();) {
      void* p = ::mmap(nullptr, size_t(kPage), PROT_READ, MAP_SHARED, g_pool[i]->fd, 0);
      int err = p == MAP_FAILED ? errno : 0;
      if (p != MAP_FAILED) ::munmap(p, size_t(kPage));
      if (err == ENODATA) ++i;
      else g_pool.erase(g_pool.begin() + long(i));
    }
  }
  std::lock_guard<std::mutex> l(g_maps_mu);
  for (const Mapping& m : g_maps) ::munmap(m.addr, m.len);
  g_maps.clear();
}

int TouchCatching(const char* p);

// One whole session on a private descriptor; checks the books.
void OpAccountant(Worker& w) {
  t_op = "accountant";
  bool expected = false;
  if (!g_accountant_busy.compare_exchange_strong(expected, true)) return;
  struct Release {
    ~Release() {
      g_want_session->store(0);
      g_accountant_busy.store(false);
    }
  } release_flag;
  g_want_session->store(1);
  Rng& r = w.rng;
  int fd = OpenDevice();
  if (fd < 0) return;  // module reloading
  tprof_sampling_config cfg;
  Call c;
  FillSamplingConfig(r, &cfg, c, 2);
  cfg.pid = g_unpriv || r.OneIn(2) ? uint32_t(::getpid()) : TPROF_PID_ALL;
  if (cfg.event_type == TPROF_SAMPLE_ON_CLOCK && cfg.frequency_hz == 0) cfg.frequency_hz = 2000;
  if (c.must_fail) { ::close(fd); return; }
  tprof_sampling_config in = cfg;
  int err = EBUSY;
  for (int i = 0; i < 100 && err == EBUSY && !g_stop; ++i) {
    cfg = in;
    err = RawIoctl("SAMPLING_START", fd, TPROF_IOC_SAMPLING_START, &cfg);
    if (err == EBUSY) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (err == EBUSY && i % 10 == 9) EvictSessions();
  }
  if (err) {
    if (err != EBUSY && err != EOPNOTSUPP && !(err == ESRCH && cfg.pid != TPROF_PID_ALL) &&
        !(err == EACCES && g_unpriv && PerfParanoid() > 2))
      VIOLATION("accountant: SAMPLING_START (pid %u, event %u, freq %u, half %u): %s", in.pid,
                in.event_type, in.frequency_hz, in.half_bytes, ErrName(err).c_str());
    Count("accountant start " + ErrName(err));
    ::close(fd);
    return;
  }
  CheckSamplingConfigOut("accountant SAMPLING_START", &in, &cfg);
  void* m = ::mmap(nullptr, cfg.map_bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    VIOLATION("accountant: mmap of the session's %llu bytes: %s", cfg.map_bytes, ErrName(errno).c_str());
    ::close(fd);
    return;
  }
  const char* map = static_cast<const char*>(m);
  if (::mprotect(m, size_t(kPage), PROT_READ | PROT_WRITE) == 0)
    VIOLATION("accountant: the buffer mapping was made writable with mprotect");
  Books books;
  books.delivered.assign(cfg.nr_cpu_ids, 0);
  books.lost_in_recs.assign(cfg.nr_cpu_ids, 0);
  books.last_seq.assign(cfg.nr_cpu_ids, ~0ULL);
  const uint32_t spid = in.pid == TPROF_PID_ALL ? TPROF_PID_ALL : uint32_t(::getpid());
  // Run: burn, fault, switch, consume while running (sometimes not at all: loss).
  bool lazy = r.OneIn(3);
  u64 end = NowNs() + 100'000'000 + r.Below(300'000'000);
  while (NowNs() < end && !g_stop) {
    Burn(2'000'000);
    void* p = ::mmap(nullptr, 16 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      std::memset(p, 1, 16 * kPage);
      ::munmap(p, 16 * kPage);
    }
    sched_yield();
    if (!lazy) ConsumeHalves(fd, map, cfg.nr_cpu_ids, cfg.ctl_bytes, cfg.half_bytes_out, &books, spid, true);
  }
  err = RawIoctl("SAMPLING_STOP", fd, TPROF_IOC_SAMPLING_STOP, nullptr);
  if (err) VIOLATION("accountant: SAMPLING_STOP of its own session: %s", ErrName(err).c_str());
  // Drain until POLLHUP.
  u64 deadline = NowNs() + 60'000'000'000ULL;
  bool hup = false;
  while (NowNs() < deadline) {
    ConsumeHalves(fd, map, cfg.nr_cpu_ids, cfg.ctl_bytes, cfg.half_bytes_out, &books, spid, true);
    pollfd pfd{fd, POLLIN, 0};
    int pr = ::poll(&pfd, 1, 1000);
    if (pr > 0 && (pfd.revents & POLLHUP)) {
      hup = true;
      break;
    }
  }
  if (!hup) VIOLATION("accountant: no POLLHUP within 60 s of stop with every half handed back");
  ConsumeHalves(fd, map, cfg.nr_cpu_ids, cfg.ctl_bytes, cfg.half_bytes_out, &books, spid, true);
  tprof_sampling_status st{};
  u64 taken = 0, lost = 0, lost_records = 0;
  for (uint32_t cpu = 0; cpu < cfg.nr_cpu_ids; ++cpu) {
    auto* ctl = reinterpret_cast<const tprof_buffer_ctl*>(map + size_t(cpu) * sizeof(tprof_buffer_ctl));
    u64 t = __atomic_load_n(&ctl->samples_taken, __ATOMIC_ACQUIRE);
    u64 l = __atomic_load_n(&ctl->lost_samples, __ATOMIC_ACQUIRE);
    taken += t;
    lost += l;
    lost_records += __atomic_load_n(&ctl->lost_records, __ATOMIC_ACQUIRE);
    if (books.delivered[cpu] + l != t)
      VIOLATION("accountant: cpu %u: delivered %llu + lost %llu != taken %llu"
                " (freq %u, half %u, event %u, pid %u)", cpu, books.delivered[cpu], l, t,
                cfg.frequency_out, cfg.half_bytes_out, in.event_type, in.pid);
    if (books.lost_in_recs[cpu] > l)
      VIOLATION("accountant: cpu %u: LOST records claim %llu samples, the control area %llu",
                cpu, books.lost_in_recs[cpu], l);
  }
  err = RawIoctl("SAMPLING_STATUS", fd, TPROF_IOC_SAMPLING_STATUS, &st);
  if (!err && st.active && st.pid == (in.pid == TPROF_PID_ALL ? TPROF_PID_ALL : uint32_t(::getpid())) &&
      (st.samples_taken != taken || st.lost_samples != lost))
    VIOLATION("accountant: status totals taken %llu lost %llu, control area %llu/%llu",
              st.samples_taken, st.lost_samples, taken, lost);
  Count("accountant sessions checked");
  Count("accountant samples", taken);
  Count("accountant lost samples", lost);
  g_accounts_done++;
  // After the session is gone, the mapping's contents must not change. A
  // CPU offline since the start (cpu hotplug ops) has no halves: its pages
  // are SIGBUS, so only the pages that read now are compared later.
  const size_t snap_bytes = size_t(std::min<u64>(cfg.map_bytes, 256 * 1024));
  std::vector<char> snap(snap_bytes);
  std::vector<bool> readable(snap_bytes / size_t(kPage));
  for (size_t pg = 0; pg < readable.size(); ++pg) {
    const char* at = map + pg * size_t(kPage);
    readable[pg] = TouchCatching(at) == 0;
    if (readable[pg]) std::memcpy(snap.data() + pg * size_t(kPage), at, size_t(kPage));
  }
  ::close(fd);
  if (r.OneIn(2)) {  // someone else allocates meanwhile
    int fd2 = OpenDevice();
    if (fd2 >= 0) {
      tprof_sampling_config c2 = in;
      c2.pid = uint32_t(::getpid());
      (void)RawIoctl("SAMPLING_START", fd2, TPROF_IOC_SAMPLING_START, &c2);
      Burn(5'000'000);
      ::close(fd2);
    }
  }
  Burn(1'000'000);
  for (size_t pg = 0; pg < readable.size(); ++pg) {
    if (!readable[pg]) continue;
    if (std::memcmp(snap.data() + pg * size_t(kPage), map + pg * size_t(kPage), size_t(kPage)) != 0) {
      VIOLATION("accountant: the buffer mapping changed after its session was closed (page %zu)", pg);
      break;
    }
  }
  ::munmap(m, cfg.map_bytes);
}

// Reads one byte at p; returns the signal it raised (SIGBUS/SIGSEGV) or 0.
thread_local sigjmp_buf t_jmp;
thread_local volatile sig_atomic_t t_catching = 0;
// Writes the lines of /proc/self/maps that hold a or b (async-signal-safe).
void SayMapsOf(u64 a, u64 b) {
  static char buf[64 * 1024];
  int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = 0, got;
  while (n < ssize_t(sizeof(buf)) - 1 && (got = ::read(fd, buf + n, sizeof(buf) - 1 - size_t(n))) > 0) n += got;
  ::close(fd);
  for (char* line = buf; line < buf + n;) {
    char* end = static_cast<char*>(std::memchr(line, '\n', size_t(buf + n - line)));
    if (!end) end = buf + n;
    u64 lo = 0, hi = 0;
    const char* p = line;
    auto hex = [&](u64& v) {
      for (; p < end; ++p) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (d < 0) break;
        v = v * 16 + u64(d);
      }
    };
    hex(lo);
    if (p < end) ++p;
    hex(hi);
    if ((a >= lo && a < hi) || (b >= lo && b < hi)) {
      (void)!::write(2, "  maps: ", 8);
      (void)!::write(2, line, size_t(end - line) + 1);
    }
    line = end + 1;
  }
}

void OnFault(int sig, siginfo_t* si, void* uc) {
  if (t_catching) siglongjmp(t_jmp, sig);
  // Not a probe: say which operation touched what before dying of it.
  const auto* ctx = static_cast<const ucontext_t*>(uc);
#if defined(__aarch64__)
  const u64 pc = ctx->uc_mcontext.pc;
#else
  const u64 pc = u64(ctx->uc_mcontext.gregs[REG_RIP]);
#endif
  char msg[256];
  int n = std::snprintf(msg, sizeof(msg), "tprof_fuzz: [pid %d tid %u op %s] uncaught %s at %p (si_code %d), pc 0x%llx\n",
                        int(::getpid()), Gettid(), t_op, sig == SIGBUS ? "SIGBUS" : "SIGSEGV", si->si_addr, si->si_code, pc);
  if (n > 0) (void)!::write(2, msg, size_t(n) < sizeof(msg) ? size_t(n) : sizeof(msg) - 1);
  SayMapsOf(u64(uintptr_t(si->si_addr)), pc);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}
// glibc's abort on a corrupt heap ("malloc(): unaligned fastbin chunk
// detected", seen once in seed 4242's root half: most likely the scratch
// array overrun EmbeddedPtr now prevents) says nothing of where: this says which operation of which thread, and its
// stack. backtrace() is primed in main (its first call may allocate).
void OnAbort(int sig) {
  char msg[160];
  int n = std::snprintf(msg, sizeof(msg), "tprof_fuzz: [pid %d tid %u op %s] abort; stack:\n", int(::getpid()),
                        Gettid(), t_op);
  if (n > 0) (void)!::write(2, msg, size_t(n) < sizeof(msg) ? size_t(n) : sizeof(msg) - 1);
  void* frames[48];
  backtrace_symbols_fd(frames, backtrace(frames, 48), 2);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

int TouchCatching(const char* p) {
  int sig = sigsetjmp(t_jmp, 1);
  if (sig == 0) {
    t_catching = 1;
    // The read must come after the flag: a plain load may be scheduled
    // before a volatile store (aarch64's GCC did, and the fault went
    // uncaught).
    std::atomic_signal_fence(std::memory_order_seq_cst);
    volatile char c = *static_cast<const volatile char*>(p);
    (void)c;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  t_catching = 0;
  return sig;
}

// A read of a fresh mapping faulted at offset o (from the mapping's start a,
// device offset off). Only a half of a CPU without buffers may: one that was
// offline when the session started and has not come online within the
// memory limit. Such a CPU's ctl.online is 0 (read after the fault, when the
// control area is in this mapping).
// half_before: the fd's half size before mmap; another session by now (the
// layout hints are racy) leaves only the control-area check.
void CheckBufferFault(const Fd& f, bool self, const char* a, u64 off, u64 o, int sig, uint32_t half_before) {
  const u64 at = off + o;
  const uint32_t ctl_bytes = f.ctl_bytes.load(), half = f.half_bytes.load();
  if (self || (ctl_bytes && at < ctl_bytes)) {
    VIOLATION("%s at offset 0x%llx of a %s mapping (control area: 0x%x bytes)", strsignal(sig), at,
              self ? "self-page" : "buffer", ctl_bytes);
    return;
  }
  Count(std::string("mmap buffer: a CPU without halves faults: ") + strsignal(sig));
  if (!ctl_bytes || !half || half != half_before) return;
  const u64 cpu = (at - ctl_bytes) / (2 * u64(half));
  if (off == 0 && cpu < f.nr_cpu.load() && (cpu + 1) * sizeof(tprof_buffer_ctl) <= ctl_bytes) {
    auto* ctl = reinterpret_cast<const tprof_buffer_ctl*>(a + cpu * sizeof(tprof_buffer_ctl));
    if (__atomic_load_n(&ctl->online, __ATOMIC_ACQUIRE))
      VIOLATION("%s reading cpu %llu's half (offset 0x%llx) while its ctl says online", strsignal(sig), cpu, at);
  }
}

// Random mmaps of the device on any descriptor.
void OpMmap(Worker& w) {
  t_op = "mmap";
  Rng& r = w.rng;
  FdRef f = PoolPick(r);
  if (!f) return;
  u64 map_bytes = f->map_bytes.load();
  const uint32_t half_before = f->half_bytes.load();
  u64 off, len;
  bool self = r.OneIn(2);
  if (self) {
    off = r.OneIn(5) ? TPROF_SELF_PAGE_OFFSET + u64(kPage) * r.Pick<u64>({1, 2, 0x100}) : TPROF_SELF_PAGE_OFFSET;
    len = r.OneIn(4) ? r.Pick<u64>({0, 1, u64(2 * kPage), u64(kPage) - 1}) : u64(kPage);
  } else {
    off = r.OneIn(5) ? u64(kPage) * r.Pick<u64>({1, 2, 3, 0x3ffff, 0x40001}) : 0;
    len = map_bytes && !r.OneIn(4) ? map_bytes
                                    : r.Pick<u64>({0, u64(kPage), map_bytes + u64(kPage),
                                                        map_bytes ? map_bytes - u64(kPage) : 1, 1 << 20});
  }
  int prot = r.Pick({PROT_READ, PROT_READ, PROT_READ, PROT_READ | PROT_WRITE, PROT_READ | PROT_EXEC,
                     PROT_NONE, PROT_WRITE});
  int flags = r.OneIn(6) ? MAP_PRIVATE : MAP_SHARED;
  void* p = ::mmap(nullptr, len, prot, flags, f->fd, off_t(off));
  int err = p == MAP_FAILED ? errno : 0;
  Count(std::string(self ? "mmap self " : "mmap buffer ") + ErrName(err));
  if (err) {
    static const int ok[] = {EINVAL, EPERM, EACCES, ENODATA, ESRCH, ENOMEM};
    if (std::find(std::begin(ok), std::end(ok), err) == std::end(ok))
      VIOLATION("mmap(len %llu, prot %d, %s, offset 0x%llx): %s", len, prot,
                flags == MAP_SHARED ? "shared" : "private", off, ErrName(err).c_str());
    return;
  }
  if (prot & PROT_WRITE && flags == MAP_SHARED)
    VIOLATION("a writable shared mapping of /dev/tprof (offset 0x%llx, len %llu) succeeded", off, len);
  if (self && (len + u64(kPage) - 1) / u64(kPage) != 1)
    VIOLATION("a self-page mapping of %llu bytes succeeded", len);
  char* a = static_cast<char*>(p);
  if (prot & PROT_READ) {
    for (u64 o = 0; o < len; o += u64(kPage)) {
      int sig = TouchCatching(a + o);
      if (sig) CheckBufferFault(*f, self, a, off, o, sig, half_before);
    }
    if (self && off == TPROF_SELF_PAGE_OFFSET && len == u64(kPage)) {
      auto* sp = reinterpret_cast<const tprof_self_page*>(a);
      uint32_t tid = __atomic_load_n(&sp->tid, __ATOMIC_ACQUIRE);
      if (tid != Gettid()) VIOLATION("the self page maps tid %u, the caller is %u", tid, Gettid());
      CheckNoKernelPointers("self page", sp, {U64F(tprof_self_page, identity), U64F(tprof_self_page, tsc_mult),
                                              U64F(tprof_self_page, tsc_in), U64F(tprof_self_page, total), U64F(tprof_self_page, resv)});
    }
  }
  if (::mprotect(p, len, PROT_READ | PROT_WRITE) == 0 && flags == MAP_SHARED)
    VIOLATION("mprotect made a shared /dev/tprof mapping writable (offset 0x%llx)", off);
  if (r.OneIn(4)) {  // try to grow or move it
    u64 new_len = len + u64(kPage) * (1 + r.Below(3));
    void* q = ::mremap(p, len, new_len, MREMAP_MAYMOVE);
    Count(std::string("mremap grow ") + ErrName(q == MAP_FAILED ? errno : 0));
    if (q != MAP_FAILED) {
      // The grown tail has nothing behind it: touching it must fault
      // (SIGBUS/SIGSEGV, caught here), never hand out a page.
      if (prot & PROT_READ) {
        int sig = TouchCatching(static_cast<char*>(q) + len);
        Count(std::string("mremap grown tail touch ") + (sig ? strsignal(sig) : "read a page"));
      }
      ::munmap(q, new_len);
      return;
    }
  }
  if (r.OneIn(3) && len > u64(kPage)) {  // partial munmap
    u64 cut = u64(kPage) * (1 + r.Below(len / u64(kPage)));
    ::munmap(a + (r.OneIn(2) ? 0 : len - std::min(cut, len)), std::min(cut, len));
    ::munmap(p, len);
    return;
  }
  std::lock_guard<std::mutex> l(g_maps_mu);
  if (g_maps.size() < kMapsMax) g_maps.push_back({a, size_t(len), self});
  else ::munmap(p, len);
}

void OpUnmap(Worker& w) {
  t_op = "munmap";
  Mapping m{};
  {
    std::lock_guard<std::mutex> l(g_maps_mu);
    if (g_maps.empty()) return;
    size_t i = w.rng.Below(g_maps.size());
    m = g_maps[i];
    g_maps.erase(g_maps.begin() + long(i));
  }
  ::munmap(m.addr, m.len);
}

// Maps this thread's self page, reads it in a seqcount loop, checks it.
void OpSelfPage(Worker& w) {
  t_op = "self page";
  Rng& r = w.rng;
  // A descriptor of its own: the mapping keeps its file open for as long as
  // this thread keeps the page, and that file must not own a session.
  int fd = OpenDevice();
  if (fd < 0) return;
  void* p = ::mmap(nullptr, size_t(kPage), PROT_READ, MAP_SHARED, fd, TPROF_SELF_PAGE_OFFSET);
  int map_errno = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    int err = map_errno;
    Count("self page " + ErrName(err));
    if (err != ENODATA && err != ESRCH && err != EACCES) VIOLATION("self page mmap: %s", ErrName(err).c_str());
    return;
  }
  Count("self page ok");
  auto* sp = static_cast<const tprof_self_page*>(p);
  u64 prev[TPROF_MAX_METRICS] = {};
  for (int i = 0; i < 3; ++i) {
    tprof_self_page copy;
    uint32_t seq;
    int tries = 0;
    do {
      seq = __atomic_load_n(&sp->seq, __ATOMIC_ACQUIRE);
      std::memcpy(&copy, sp, sizeof(copy));
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
    } while ((seq & 1 || __atomic_load_n(&sp->seq, __ATOMIC_ACQUIRE) != seq) && ++tries < 1000000);
    if (copy.tid != Gettid()) VIOLATION("self page: tid %u, caller %u", copy.tid, Gettid());
    if (copy.nr_metrics > TPROF_MAX_METRICS ||
        (copy.time_index != TPROF_SELF_NO_TIME && copy.time_index >= copy.nr_metrics) ||
        (copy.flags & ~(TPROF_SELF_LIVE | TPROF_SELF_TSC)) || !AllZero(copy.resv, sizeof(copy.resv)))
      VIOLATION("self page: nr_metrics %u time_index %u flags 0x%x resv %d", copy.nr_metrics,
                copy.time_index, copy.flags, !AllZero(copy.resv, sizeof(copy.resv)));
    for (uint32_t k = 0; k < TPROF_MAX_METRICS && (copy.flags & TPROF_SELF_LIVE); ++k) {
      if (copy.total[k] + 1'000'000 < prev[k])
        VIOLATION("self page: total[%u] went back from %llu to %llu", k, prev[k], copy.total[k]);
      prev[k] = copy.total[k];
    }
    CheckNoKernelPointers("self page", &copy, {U64F(tprof_self_page, identity), U64F(tprof_self_page, tsc_mult),
                                               U64F(tprof_self_page, tsc_in), U64F(tprof_self_page, total), U64F(tprof_self_page, resv)});
    Burn(200'000);
  }
  if (::mprotect(p, size_t(kPage), PROT_READ | PROT_WRITE) == 0) VIOLATION("self page made writable");
  if (r.OneIn(3)) ::munmap(p, size_t(kPage));
  else w.self_pages.push_back({static_cast<char*>(p), size_t(kPage), true});
}

// A chaotic session on a shared descriptor: start, map, read some, stop or not.
void OpSession(Worker& w) {
  t_op = "session";
  Rng& r = w.rng;
  FdRef f = PoolPick(r);
  if (!f) return;
  if (g_accountant_busy.load() && r.OneIn(2)) return;
  switch (r.Below(5)) {
    case 0:
    case 1: {
      if (g_want_session->load()) return;  // the accountant's turn
      tprof_sampling_config cfg;
      Call c;
      FillSamplingConfig(r, &cfg, c, 1);
      tprof_sampling_config in = cfg;
      int err = RawIoctl("SAMPLING_START", f->fd, TPROF_IOC_SAMPLING_START, &cfg);
      Count("session start " + ErrName(err));
      if (!err) {
        if (c.must_fail) VIOLATION("SAMPLING_START succeeded although %s", c.defect.c_str());
        CheckSamplingConfigOut("SAMPLING_START", &in, &cfg);
        std::lock_guard<std::mutex> l(f->layout_mu);
        f->map_bytes = cfg.map_bytes;
        f->half_bytes = cfg.half_bytes_out;
        f->nr_cpu = cfg.nr_cpu_ids;
        f->ctl_bytes = cfg.ctl_bytes;
        f->started_ns = NowNs();
      }
      break;
    }
    case 2: {  // read what is there through a fresh mapping
      u64 mb;
      uint32_t nr_cpu, ctl, half;
      {
        std::lock_guard<std::mutex> l(f->layout_mu);
        mb = f->map_bytes;
        nr_cpu = f->nr_cpu;
        ctl = f->ctl_bytes;
        half = f->half_bytes;
      }
      if (!mb) return;
      void* p = ::mmap(nullptr, mb, PROT_READ, MAP_SHARED, f->fd, 0);
      if (p == MAP_FAILED) return;  // another session by now, or none
      Burn(1'000'000);
      // Other threads may hand the same halves back while this one reads
      // them (the kernel then writes them again): exercise only, the
      // accountant checks records on a session nobody else can touch.
      t_quiet = true;
      ConsumeHalves(f->fd, static_cast<char*>(p), nr_cpu, ctl, half, nullptr, TPROF_PID_ALL, r.OneIn(2));
      t_quiet = false;
      ::munmap(p, mb);
      break;
    }
    case 3: {  // stop a session that has run for a while
      if (NowNs() - f->started_ns.load() < 200'000'000ULL && !g_accountant_busy.load()) return;
      int err = RawIoctl("SAMPLING_STOP", f->fd, TPROF_IOC_SAMPLING_STOP, nullptr);
      Count("session stop " + ErrName(err));
      if (err && err != ENODATA && err != EPERM) VIOLATION("SAMPLING_STOP: %s", ErrName(err).c_str());
      break;
    }
    default: {  // windows on whatever session this fd has
      for (int i = 0; i < 3; ++i) {
        unsigned char buf[sizeof(tprof_window_add)];
        Call c;
        FillWindowAdd(r, w, buf, c);
        int err = RawIoctl("WINDOW_ADD", f->fd, TPROF_IOC_WINDOW_ADD, buf);
        Count("session window " + ErrName(err));
      }
    }
  }
}

// Open, dup, close descriptors of the pool.
void OpFds(Worker& w) {
  t_op = "fds";
  Rng& r = w.rng;
  switch (r.Below(4)) {
    case 0:
    case 1: {
      int fd = OpenDevice(r.OneIn(5) ? O_RDONLY : (r.OneIn(8) ? O_WRONLY : O_RDWR));
      if (fd >= 0) PoolAdd(std::make_shared<Fd>(fd));
      else if (errno != ENOENT && errno != ENODEV && errno != ENXIO) VIOLATION("open: %s", ErrName(errno).c_str());
      break;
    }
    case 2: {
      FdRef f = PoolPick(r);
      if (!f) return;
      int fd = ::fcntl(f->fd, F_DUPFD_CLOEXEC, 0);
      if (fd >= 0) {
        auto d = std::make_shared<Fd>(fd);
        {
          std::lock_guard<std::mutex> l(f->layout_mu);
          d->map_bytes = f->map_bytes.load();
          d->half_bytes = f->half_bytes.load();
          d->nr_cpu = f->nr_cpu.load();
          d->ctl_bytes = f->ctl_bytes.load();
        }
        PoolAdd(d);
      }
      break;
    }
    default:
      PoolTake(r);  // closed when the last user drops it
  }
}

void OpPoll(Worker& w) {
  t_op = "poll";
  FdRef f = PoolPick(w.rng);
  if (!f) return;
  pollfd pfd{f->fd, short(POLLIN | POLLOUT | POLLPRI), 0};
  int r = ::poll(&pfd, 1, int(w.rng.Below(20)));
  if (r < 0) VIOLATION("poll: %s", ErrName(errno).c_str());
  if (r > 0 && (pfd.revents & POLLNVAL)) VIOLATION("poll revents 0x%x", pfd.revents);
  char c;
  ssize_t n = ::read(f->fd, &c, 1);  // no read method: an error, never data
  if (n > 0) VIOLATION("read(2) of /dev/tprof returned data");
}

// Metrics on/off (root): mostly on, so the metric paths run.
void OpMetrics(Worker& w) {
  t_op = "metrics";
  if (g_unpriv) return;
  FdRef f = PoolPick(w.rng);
  if (!f) return;
  if (w.rng.OneIn(6)) {
    int err = RawIoctl("METRICS_DISABLE", f->fd, TPROF_IOC_METRICS_DISABLE, nullptr);
    Count("metrics disable " + ErrName(err));
    if (err) VIOLATION("METRICS_DISABLE as root: %s", ErrName(err).c_str());
    return;
  }
  tprof_metrics_config cfg{};
  cfg.nr_metrics = 3;
  cfg.metrics[0].type = TPROF_METRIC_TIME;
  cfg.metrics[1].type = TPROF_METRIC_DISPATCHES;
  cfg.metrics[2].type = TPROF_METRIC_SOFTWARE;
  cfg.metrics[2].config = w.rng.Pick<u64>({2, 3, 4});
  int err = RawIoctl("METRICS_ENABLE", f->fd, TPROF_IOC_METRICS_ENABLE, &cfg);
  Count("metrics enable " + ErrName(err));
  if (err && err != ENOMEM) VIOLATION("METRICS_ENABLE (time, dispatches, software) as root: %s", ErrName(err).c_str());
}

// A short-lived thread: its own fd or a pool one, READ_SELF, self page, exit.
void OpThread(Worker& w) {
  t_op = "thread";
  u64 seed = w.rng.Next();
  int n = 1 + int(w.rng.Below(4));
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i)
    ts.emplace_back([seed, i] {
      t_op = "short thread";
      Rng r(seed + u64(i));
      int fd = OpenDevice();
      if (fd < 0) return;
      tprof_self_read sr;
      int err = RawIoctl("READ_SELF", fd, TPROF_IOC_READ_SELF, &sr);
      if (err && err != ENODATA && err != ESRCH) VIOLATION("READ_SELF: %s", ErrName(err).c_str());
      void* p = ::mmap(nullptr, size_t(kPage), PROT_READ, MAP_SHARED, fd, TPROF_SELF_PAGE_OFFSET);
      Burn(r.Below(2'000'000));
      if (p != MAP_FAILED) {
        auto* sp = static_cast<const tprof_self_page*>(p);
        if (sp->tid != Gettid()) VIOLATION("a short-lived thread's self page has tid %u", sp->tid);
        if (r.OneIn(2)) ::munmap(p, size_t(kPage));  // else the mapping outlives the thread
        else {
          std::lock_guard<std::mutex> l(g_maps_mu);
          if (g_maps.size() < kMapsMax) g_maps.push_back({static_cast<char*>(p), size_t(kPage), true});
          else ::munmap(p, size_t(kPage));
        }
      }
      if (r.OneIn(2)) ::close(fd);
      else PoolAdd(std::make_shared<Fd>(fd));  // the fd outlives the thread
    });
  for (auto& t : ts) t.join();
}

// Drains as fast as possible (while threads exit elsewhere).
void OpDrain(Worker& w) {
  t_op = "drain";
  FdRef f = PoolPick(w.rng);
  if (!f) return;
  for (int i = 0; i < 4; ++i) {
    tprof_drain d{};
    Call c;
    d.pid = g_unpriv ? 0 : (w.rng.OneIn(2) ? TPROF_PID_ALL : 0);
    d.capacity = uint32_t(w.rng.Below(64));
    d.records = EmbeddedPtr(w.rng, c, sizeof(tprof_thread_metrics), d.capacity);
    tprof_drain in = d;
    int err = RawIoctl("DRAIN", f->fd, TPROF_IOC_DRAIN, &d);
    Count("drain " + ErrName(err));
    if (err) {
      bool half_given = in.capacity == 0 || in.records == 0;  // EINVAL, as in GET_INFO
      if (err != ENODATA && err != EFAULT && !(err == EINVAL && half_given))
        VIOLATION("DRAIN pid %u, capacity %u, records %s: %s", in.pid, in.capacity,
                  PtrKindName(c.embedded), ErrName(err).c_str());
      if (err == EFAULT && c.embedded == PtrKind::kValid) VIOLATION("DRAIN into a valid buffer: EFAULT");
    } else {
      CheckDrain(w, &in, &d, c);
    }
  }
}

// A forked child uses inherited descriptors and mappings, then exits.
void OpFork(Worker& w) {
  t_op = "fork";
  // References held across fork(): the child inherits open descriptors.
  std::vector<FdRef> refs = PoolRefs();
  std::vector<int> fds;
  for (const FdRef& f : refs) fds.push_back(f->fd);
  std::vector<Mapping> selfs = w.self_pages;
  u64 seed = w.rng.Next();
  const uint32_t parent = uint32_t(::getpid());
  // The own-pid set goes to the child locked, so it is a consistent copy.
  pid_t pid = ForkOwn();
  if (pid < 0) return;
  if (pid == 0) {
    g_in_child = true;
    AddOwnPid(parent);
    t_op = "forked child";
    Rng r(seed);
    unsigned char vec[4];
    for (const Mapping& m : selfs)
      if (::mincore(m.addr, m.len, vec) == 0)
        VIOLATION("the parent's self page at %p is mapped in the forked child (VM_DONTCOPY)", static_cast<void*>(m.addr));
    Worker cw(-1, seed);
    Scratch* s = new Scratch;
    t_scratch = s;
    for (int i = 0; i < 8 && !fds.empty(); ++i) {
      int fd = fds[r.Below(fds.size())];
      switch (r.Below(4)) {
        case 0: (void)RawIoctl("SAMPLING_STOP", fd, TPROF_IOC_SAMPLING_STOP, nullptr); break;
        case 1:
          ::close(fd);
          fds.erase(std::find(fds.begin(), fds.end(), fd));
          break;
        default: FuzzIoctl(cw, fd);
      }
    }
    ::_exit(0);
  }
  if (g_unpriv) AddOwnPid(uint32_t(pid));
  int st = 0;
  if (w.rng.OneIn(3)) Burn(w.rng.Below(3'000'000));
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 66) g_violations++;  // reported by the child
  else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    VIOLATION("forked child ended with status 0x%x", st);
  Count("forks");
}

void OpIoctl(Worker& w) {
  FdRef f = PoolPick(w.rng);
  if (!f) return;
  for (int i = 0; i < 8; ++i) FuzzIoctl(w, f->fd);
}

// ---- PMU programs and their generic netlink family ------------------------------------
//
// OpPmuNetlink plays a scene: a burner thread that takes page faults and
// runs tprof_fuzz_spin (events fire on every fault or visit), a few
// programs (on the burner thread, on the process, on every CPU, or
// FillPmuCreate's random ones), a few raw NETLINK_GENERIC sockets (bound
// to random, the process's or the parent's port ids, some with tiny
// receive buffers), and a random sequence of subscriptions (valid; with
// closed, foreign, non-program and nonsense descriptors), malformed
// messages (missing, short, long, duplicated, unknown and nested
// attributes, other commands, flags and families, truncated headers,
// batches, oversized ones), drains, socket and program closes while
// events fire, and forks that subscribe with inherited descriptors. Every
// descriptor is closed at the end, so module cycles find nothing held.
//
// Invariants: every refusal is documented (the handler's EBADF, EINVAL,
// EAGAIN, ENOMEM; generic netlink's EOPNOTSUPP, EINVAL, ERANGE, ENOENT for
// malformed messages; see the uapi header); a request the kernel parsed is
// answered (the send runs the handler synchronously) unless the socket
// overran; events reach only a socket that subscribed, and an unprivileged
// socket only events of its own process tree, with no kernel address; per
// program and socket the sequence numbers increase, and for a program
// with one producer thread and one monitor ever, delivered + lost >= seq.

constexpr u64 kNoProg = ~0ULL;  // a subscription to a descriptor not of this scene

// Program descriptors of this process that a random-descriptor subscription
// could hit: marked "stolen" (their monitor may have moved) before it is
// sent. Creation, close and such subscriptions hold g_prog_mu, so a number
// cannot change hands in between.
std::mutex g_prog_mu;
std::map<int, std::shared_ptr<std::atomic<bool>>> g_prog_fds;

struct NlProg {
  u64 id;
  int fd = -1;
  uint32_t scope = 0, nr_counters = 0, nr_rules = 0;
  uint32_t target_tid = 0;           // THREAD scope: the thread counted
  bool single_producer = false;      // one thread raises its events: they are queued in seq order
  bool own_process = false;          // thread or process scope in this process: events of its tree only
  std::shared_ptr<std::atomic<bool>> stolen = std::make_shared<std::atomic<bool>>(false);
  std::set<u64> sockets_ever;        // sockets whose subscription to it was confirmed
};

struct NlSock {
  u64 id;
  int fd = -1;
  uint32_t portid = 0;
  std::set<u64> progs_ever;          // confirmed subscriptions (kNoProg: some other program)
  std::map<uint32_t, u64> pending;   // request seq -> program id, until its reply
  u64 delivered = 0, lost_sum = 0, last_seq = 0;
  bool overran = false;              // ENOBUFS since the last request
};

struct NlScene {
  uint16_t family = 0;
  std::vector<NlProg> progs;
  std::vector<NlSock> socks;
  std::set<uint32_t> strangers;      // processes outside every program's scope (OpProbes)
  uint32_t next_seq = 1;
  u64 next_id = 1;
  NlProg* Prog(u64 id) {
    for (NlProg& p : progs)
      if (p.id == id) return &p;
    return nullptr;
  }
};

bool NlDocumented(int e) {
  return e == EBADF || e == EINVAL || e == EAGAIN || e == ENOMEM || e == EOPNOTSUPP ||
         e == ERANGE || e == ENOENT;
}

// A netlink message under construction: header, generic header, attributes.
struct NlMsg {
  std::vector<unsigned char> b;
  NlMsg(uint16_t type, uint16_t flags, uint32_t seq, uint8_t cmd, uint8_t version = TPROF_PMU_GENL_VERSION) {
    b.resize(NLMSG_HDRLEN + GENL_HDRLEN);
    nlmsghdr h{};
    h.nlmsg_type = type;
    h.nlmsg_flags = flags;
    h.nlmsg_seq = seq;
    std::memcpy(b.data(), &h, sizeof(h));
    genlmsghdr g{};
    g.cmd = cmd;
    g.version = version;
    std::memcpy(b.data() + NLMSG_HDRLEN, &g, sizeof(g));
  }
  void Attr(uint16_t type, const void* data, size_t len) {
    nlattr a{};
    a.nla_len = uint16_t(NLA_HDRLEN + len);
    a.nla_type = type;
    size_t at = b.size();
    b.resize(at + NLA_ALIGN(NLA_HDRLEN + len), 0);
    std::memcpy(b.data() + at, &a, sizeof(a));
    if (len) std::memcpy(b.data() + at + NLA_HDRLEN, data, len);
  }
  void U32(uint16_t type, uint32_t v) { Attr(type, &v, sizeof(v)); }
  // nlmsg_len: the message's size unless told otherwise.
  const unsigned char* Finish(uint32_t len = 0) {
    uint32_t l = len ? len : uint32_t(b.size());
    std::memcpy(b.data() + offsetof(nlmsghdr, nlmsg_len), &l, sizeof(l));
    return b.data();
  }
};

int NlSend(int fd, const void* p, size_t n) {
  sockaddr_nl k{};
  k.nl_family = AF_NETLINK;
  return ::sendto(fd, p, n, 0, reinterpret_cast<sockaddr*>(&k), sizeof(k)) < 0 ? errno : 0;
}

// The family's id through the controller (0: not registered).
uint16_t NlResolve(int fd) {
  NlMsg m(GENL_ID_CTRL, NLM_F_REQUEST, 1, CTRL_CMD_GETFAMILY, 1);
  m.Attr(CTRL_ATTR_FAMILY_NAME, TPROF_PMU_GENL_NAME, sizeof(TPROF_PMU_GENL_NAME));
  if (NlSend(fd, m.Finish(), m.b.size())) return 0;
  alignas(nlmsghdr) unsigned char buf[8192];
  for (int tries = 0; tries < 64; ++tries) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0) return 0;
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, size_t(n)); h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_type == NLMSG_ERROR) return 0;
      if (h->nlmsg_type != GENL_ID_CTRL || h->nlmsg_seq != 1) continue;
      auto* a = reinterpret_cast<nlattr*>(static_cast<char*>(NLMSG_DATA(h)) + GENL_HDRLEN);
      int left = int(h->nlmsg_len) - int(NLMSG_HDRLEN + GENL_HDRLEN);
      for (; left >= int(NLA_HDRLEN) && a->nla_len >= NLA_HDRLEN && int(a->nla_len) <= left;
           left -= NLA_ALIGN(a->nla_len), a = reinterpret_cast<nlattr*>(reinterpret_cast<char*>(a) + NLA_ALIGN(a->nla_len)))
        if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID && a->nla_len >= NLA_HDRLEN + 2) {
          uint16_t id;
          std::memcpy(&id, reinterpret_cast<char*>(a) + NLA_HDRLEN, 2);
          return id;
        }
      return 0;
    }
  }
  return 0;
}

// The same on a socket of its own: -1 without a socket (fds may run out).
int NlFamily() {
  int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
  if (fd < 0) return -1;
  int family = NlResolve(fd);
  ::close(fd);
  return family;
}

// One event on socket s: where it may go, what it may say.
void NlCheckEvent(NlScene& sc, NlSock& s, const nlattr* a, int left) {
  const tprof_pmu_event* evp = nullptr;
  for (; left >= int(NLA_HDRLEN) && a->nla_len >= NLA_HDRLEN && int(a->nla_len) <= left;
       left -= NLA_ALIGN(a->nla_len), a = reinterpret_cast<const nlattr*>(reinterpret_cast<const char*>(a) + NLA_ALIGN(a->nla_len))) {
    if (a->nla_type != TPROF_PMU_A_EVENT || a->nla_len != NLA_HDRLEN + sizeof(tprof_pmu_event)) {
      VIOLATION("pmu event: attribute type %u length %u (want %u, %zu bytes)", a->nla_type, a->nla_len,
                TPROF_PMU_A_EVENT, NLA_HDRLEN + sizeof(tprof_pmu_event));
      return;
    }
    evp = reinterpret_cast<const tprof_pmu_event*>(reinterpret_cast<const char*>(a) + NLA_HDRLEN);
  }
  if (!evp) {
    VIOLATION("pmu event without a TPROF_PMU_A_EVENT attribute");
    return;
  }
  tprof_pmu_event ev;
  std::memcpy(&ev, evp, sizeof(ev));
  Count("pmu nl events");
  if (ev.lost) Count("pmu nl events announced lost", ev.lost);
  if (s.progs_ever.empty()) {
    VIOLATION("pmu event (seq %llu, pid %u tid %u) reached socket port %u, which never subscribed", ev.seq,
              ev.pid, ev.tid, s.portid);
    return;
  }
  if (ev.seq == 0 || (ev.kind != TPROF_PMU_EVENT_THRESHOLD && ev.kind != TPROF_PMU_EVENT_RULE) ||
      ev.nr_counters < 1 || ev.nr_counters > TPROF_PMU_MAX_COUNTERS ||
      ev.index >= (ev.kind == TPROF_PMU_EVENT_THRESHOLD ? ev.nr_counters : TPROF_PMU_MAX_RULES) ||
      !AllZero(ev.resv, sizeof(ev.resv)))
    VIOLATION("pmu event malformed: seq %llu kind %u index %u nr_counters %u resv %d", ev.seq, ev.kind,
              ev.index, ev.nr_counters, !AllZero(ev.resv, sizeof(ev.resv)));
  for (uint32_t k = ev.nr_counters; k < TPROF_PMU_MAX_COUNTERS; ++k)
    if (ev.values[k]) VIOLATION("pmu event: unused counter %u is %llu", k, ev.values[k]);
  if (g_unpriv) {
    CheckNoKernelPointers("pmu event", &ev, {U64F(tprof_pmu_event, ip), U64F(tprof_pmu_event, values),
                                             U64F(tprof_pmu_event, addr)});
    // A forked subscriber's own-pid set is a copy from the fork: the events
    // it reads are of its parent's programs, whose later children it cannot
    // know but finds under the parent.
    if (ev.pid && !IsOwnPid(ev.pid) && !DescendsFrom(ev.pid, uint32_t(::getpid())) &&
        !(g_in_child.load() && DescendsFrom(ev.pid, uint32_t(::getppid()))))
      VIOLATION("pmu event of pid %u (tid %u), not of this process tree, reached an unprivileged socket (seq %llu "
                "kind %u index %u; the pid: %s; this process's parent %d)",
                ev.pid, ev.tid, ev.seq, ev.kind, ev.index, DescribePid(ev.pid).c_str(), int(::getppid()));
  }
  if (s.progs_ever.size() != 1 || *s.progs_ever.begin() == kNoProg) return;
  NlProg* p = sc.Prog(*s.progs_ever.begin());
  if (!p) return;
  if (p->nr_counters && ev.nr_counters != p->nr_counters)  // 0: not known (a forked child's)
    VIOLATION("pmu event: nr_counters %u, the program has %u", ev.nr_counters, p->nr_counters);
  // A program of this process's scope counts this process and what it
  // forks afterwards, never another process running the same code.
  if (p->own_process && ev.pid &&
      (sc.strangers.count(ev.pid) || (!IsOwnPid(ev.pid) && !DescendsFrom(ev.pid, uint32_t(::getpid())))))
    VIOLATION("pmu event of pid %u (tid %u) for a program of this process's scope, but pid %u is %s", ev.pid, ev.tid,
              ev.pid, sc.strangers.count(ev.pid) ? "a stranger running the same binary" : "not of this process tree");
  if (!p->single_producer) return;
  if (p->target_tid && (ev.pid != uint32_t(::getpid()) || ev.tid != p->target_tid))
    VIOLATION("pmu event of a program on thread %u says pid %u tid %u", p->target_tid, ev.pid, ev.tid);
  s.delivered++;
  s.lost_sum += ev.lost;
  if (ev.seq <= s.last_seq)
    VIOLATION("pmu event seq %llu after %llu on the same program and socket", ev.seq, s.last_seq);
  s.last_seq = ev.seq;
  if (p->stolen->load() || p->sockets_ever.size() != 1) return;
  Count("pmu nl events accounted");
  if (s.delivered + s.lost_sum < ev.seq)
    VIOLATION("pmu event seq %llu but only %llu delivered + %llu announced lost on its one monitor",
              ev.seq, s.delivered, s.lost_sum);
}

struct NlAnswer {
  bool replied = false;  // the SUBSCRIBE reply
  bool acked = false;    // an NLMSG_ERROR for the request
  int err = 0;           // its errno
};

// Reads what socket s holds (waiting up to wait_ms for the first message);
// the answer to request seq `want` goes to *ans.
void NlPump(NlScene& sc, NlSock& s, uint32_t want, NlAnswer* ans, int wait_ms = 0) {
  static thread_local std::vector<unsigned char> buf(256 * 1024);
  for (int rounds = 0; rounds < 512; ++rounds) {
    if (wait_ms) {
      pollfd pf{s.fd, POLLIN, 0};
      (void)::poll(&pf, 1, wait_ms);
      wait_ms = 0;
    }
    ssize_t n = ::recv(s.fd, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == ENOBUFS) {
        s.overran = true;
        Count("pmu nl receive overrun (ENOBUFS)");
        continue;
      }
      if (errno != EAGAIN && errno != EINTR) VIOLATION("pmu nl recv: %s", ErrName(errno).c_str());
      return;
    }
    int len = int(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_type == NLMSG_ERROR) {
        auto* e = static_cast<nlmsgerr*>(NLMSG_DATA(h));
        int err = -e->error;
        if (err && !NlDocumented(err))
          VIOLATION("pmu nl request %u refused with %s, not documented", h->nlmsg_seq, ErrName(err).c_str());
        if (ans && h->nlmsg_seq == want) {
          ans->acked = true;
          ans->err = err;
        }
        if (err) s.pending.erase(h->nlmsg_seq);
        continue;
      }
      if (h->nlmsg_type != sc.family || h->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN) {
        VIOLATION("pmu nl: unexpected message type %u length %u (family %u)", h->nlmsg_type, h->nlmsg_len,
                  sc.family);
        continue;
      }
      auto* g = static_cast<genlmsghdr*>(NLMSG_DATA(h));
      if (g->cmd == TPROF_PMU_CMD_SUBSCRIBE) {
        auto it = s.pending.find(h->nlmsg_seq);
        if (it == s.pending.end()) {
          VIOLATION("pmu nl: a subscription reply (seq %u) for no request of this socket", h->nlmsg_seq);
          continue;
        }
        s.progs_ever.insert(it->second);
        if (NlProg* p = sc.Prog(it->second)) p->sockets_ever.insert(s.id);
        s.pending.erase(it);
        if (ans && h->nlmsg_seq == want) ans->replied = true;
      } else if (g->cmd == TPROF_PMU_CMD_EVENT) {
        NlCheckEvent(sc, s, reinterpret_cast<const nlattr*>(reinterpret_cast<const char*>(g) + GENL_HDRLEN),
                     int(h->nlmsg_len) - int(NLMSG_HDRLEN + GENL_HDRLEN));
      } else {
        VIOLATION("pmu nl: message with command %u", g->cmd);
      }
    }
  }
}

// Sends a request and reads its answer: the handler runs inside sendto(),
// so the answer is queued by then, unless the socket overran. silent: a
// message generic netlink may drop without an answer (bad lengths).
// Returns the errno (0: success), or -1 without an answer.
int NlRequest(NlScene& sc, NlSock& s, NlMsg& m, uint32_t len, u64 prog, bool silent, const char* what) {
  const uint32_t seq = sc.next_seq++;
  std::memcpy(m.b.data() + offsetof(nlmsghdr, nlmsg_seq), &seq, sizeof(seq));
  const uint16_t cmd = reinterpret_cast<genlmsghdr*>(m.b.data() + NLMSG_HDRLEN)->cmd;
  if (cmd == TPROF_PMU_CMD_SUBSCRIBE) s.pending[seq] = prog;
  NlPump(sc, s, 0, nullptr);  // room for the answer
  s.overran = false;
  int err = NlSend(s.fd, m.Finish(len), m.b.size());
  if (err) {
    Count(std::string("pmu nl send ") + what + " " + ErrName(err));
    if (err != ENOBUFS && err != ENOMEM && err != EAGAIN && err != EMSGSIZE)
      VIOLATION("pmu nl sendto (%s): %s", what, ErrName(err).c_str());
    s.pending.erase(seq);
    return err;
  }
  NlAnswer ans;
  NlPump(sc, s, seq, &ans);
  bool want_ack = m.b[offsetof(nlmsghdr, nlmsg_flags)] & NLM_F_ACK;
  int result = ans.acked ? ans.err : ans.replied && !want_ack ? 0 : -1;
  if (ans.acked && ans.err == 0 && !ans.replied && cmd == TPROF_PMU_CMD_SUBSCRIBE && !s.overran && !silent &&
      len == 0 && s.pending.count(seq))
    VIOLATION("pmu nl %s: acknowledged without the subscription reply", what);
  // A monitor's events may fill its buffer without another ENOBUFS (netlink
  // reports an overrun once until the queue is empty): only a socket that
  // never subscribed must have its answer.
  const bool quiet_socket = s.progs_ever.empty() && s.pending.size() <= 1;
  if (result == -1 && !s.overran && !silent && quiet_socket && (want_ack || cmd == TPROF_PMU_CMD_SUBSCRIBE))
    VIOLATION("pmu nl %s (seq %u): no answer although the socket did not overrun", what, seq);
  Count(std::string("pmu nl ") + what + " " + (result < 0 ? "no answer" : ErrName(result)));
  return result;
}

int NlSubscribe(NlScene& sc, NlSock& s, int fd, u64 prog, const char* what, uint16_t flags = NLM_F_REQUEST | NLM_F_ACK) {
  NlMsg m(sc.family, flags, 0, TPROF_PMU_CMD_SUBSCRIBE);
  m.U32(TPROF_PMU_A_PROGRAM_FD, uint32_t(fd));
  return NlRequest(sc, s, m, 0, prog, false, what);
}

// A socket bound to a random, the process's, the parent's or an automatic
// port id; sometimes with a tiny receive buffer, so events overrun it.
bool NlOpenSocket(Rng& r, NlScene& sc, bool autobind = false) {
  int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
  if (fd < 0) {
    Count("pmu nl socket " + ErrName(errno));
    return false;
  }
  sockaddr_nl a{};
  a.nl_family = AF_NETLINK;
  switch (autobind ? 4 : r.Below(5)) {
    case 0: a.nl_pid = uint32_t(::getppid()); break;  // the parent's (the root parent's, unprivileged)
    case 1: a.nl_pid = uint32_t(::getpid()); break;
    case 2: a.nl_pid = uint32_t(r.Next()); break;
    case 3: a.nl_pid = uint32_t(::getppid()) + uint32_t(r.Below(4)); break;
    default: break;
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    Count("pmu nl bind " + ErrName(errno));
    a.nl_pid = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      ::close(fd);
      return false;
    }
  }
  socklen_t al = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &al);
  if (!autobind && r.OneIn(3)) {
    int sz = int(r.Pick<u64>({256, 1024, 4096, 16384}));
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
  }
  NlSock s;
  s.id = sc.next_id++;
  s.fd = fd;
  s.portid = a.nl_pid;
  sc.socks.push_back(std::move(s));
  return true;
}

// The thread events come from: page faults on fresh pages, spin visits,
// writes of the watched word.
struct Burner {
  std::atomic<bool> stop{false};
  std::atomic<uint32_t> tid{0};
  std::thread t;
  // relentless: no pause, so that events are in flight at any moment.
  explicit Burner(bool relentless = false) {
    t = std::thread([this, relentless] {
      tid = Gettid();
      while (!stop.load()) {
        void* m = ::mmap(nullptr, size_t(kPage) * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED) {
          for (int i = 0; i < 8; ++i) static_cast<volatile char*>(m)[i * kPage] = 1;
          ::munmap(m, size_t(kPage) * 8);
        }
        tprof_fuzz_spin(3);
        g_pmu_word = g_pmu_word + 1;
        // A few thousand events a second are enough; a busier loop on
        // every worker starves the other operations in a TCG guest.
        if (!relentless) std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    });
    while (!tid.load()) std::this_thread::yield();
  }
  ~Burner() {
    stop = true;
    t.join();
  }
};

// A program that fires often: every page fault (or spin visit) of the
// burner thread, or of the process, or of every CPU; or a random one.
void NlCreateProgram(Rng& r, Worker& w, NlScene& sc, int dev, uint32_t burner_tid) {
  tprof_pmu_program in{};
  NlProg p;
  p.id = sc.next_id++;
  const u64 kind = r.Below(6);
  if (kind == 5) {  // FillPmuCreate's: any shape, valid or not
    Call c;
    FillPmuCreate(r, w, &in, c);
  } else {
    in.scope = kind <= 2 ? TPROF_PMU_SCOPE_THREAD : kind == 3 ? TPROF_PMU_SCOPE_PROCESS : TPROF_PMU_SCOPE_CPUS;
    in.pid = in.scope == TPROF_PMU_SCOPE_THREAD && kind != 2 ? burner_tid : 0;
    in.nr_counters = 1;
    tprof_pmu_counter& k = in.counters[0];
    if (kind == 1) {
      k.kind = TPROF_PMU_EV_BREAKPOINT;
      k.addr = u64(uintptr_t(&tprof_fuzz_spin));
    } else {
      k.kind = TPROF_PMU_EV_SOFTWARE;
      k.config = 2;  // PERF_COUNT_SW_PAGE_FAULTS
    }
    k.threshold = 1 + r.Below(3);
    k.threshold_every = r.OneIn(4) ? 1 + r.Below(8) : 1;
    if (in.scope == TPROF_PMU_SCOPE_CPUS) k.threshold_every = 16 + r.Below(48);  // every fault of every process
    if (r.OneIn(2)) {  // a rule over the same counter
      in.nr_rules = 1;
      tprof_pmu_rule& rule = in.rules[0];
      rule.nr_terms = 1;
      rule.op = TPROF_PMU_OP_GE;
      rule.rearm = TPROF_PMU_REARM_ON_FALSE;
      rule.constant = int64_t(r.Below(50));
      rule.terms[0].counter = 0;
      rule.terms[0].multiplier = 1;
    }
  }
  p.scope = in.scope;
  p.nr_counters = in.nr_counters;
  p.nr_rules = in.nr_rules;
  p.target_tid = in.scope == TPROF_PMU_SCOPE_THREAD ? (in.pid ? in.pid : Gettid()) : 0;
  // Every event of a program on one thread of this process is raised by
  // that thread, one after another: they are queued in seq order.
  p.single_producer = in.scope == TPROF_PMU_SCOPE_THREAD && (p.target_tid == burner_tid || p.target_tid == Gettid());
  std::lock_guard<std::mutex> l(g_prog_mu);
  int err = RawIoctl("PMU_CREATE", dev, TPROF_IOC_PMU_CREATE, &in);
  Count("pmu nl program create " + ErrName(err));
  if (err) {
    if (err != EINVAL && err != EPERM && err != EACCES && err != ESRCH && err != ENOENT && err != EOPNOTSUPP &&
        err != ENOSPC && err != ENOMEM && err != E2BIG && err != EMFILE && err != EFAULT && err != kBreakpointBusy)
      VIOLATION("PMU_CREATE (scene) failed with %s, not documented", ErrName(err).c_str());
    return;
  }
  p.fd = in.fd;
  g_prog_fds[p.fd] = p.stolen;
  sc.progs.push_back(std::move(p));
}

void NlCloseProgram(NlProg& p) {
  std::lock_guard<std::mutex> l(g_prog_mu);
  g_prog_fds.erase(p.fd);
  ::close(p.fd);
  p.fd = -1;
}

// A program's books before it closes: the kernel sent at least what its
// one monitor read, and never more than it queued.
void NlCheckBooks(NlScene& sc, const NlProg& p) {
  tprof_pmu_values v{};
  if (::ioctl(p.fd, TPROF_IOC_PMU_READ, &v) != 0) {
    VIOLATION("PMU_READ on a live program: %s", ErrName(errno).c_str());
    return;
  }
  if (v.events_sent > v.events_queued)
    VIOLATION("PMU_READ: sent %llu > queued %llu", v.events_sent, v.events_queued);
  if (p.stolen->load() || p.sockets_ever.size() != 1 || !p.single_producer) return;
  for (const NlSock& s : sc.socks)
    if (s.id == *p.sockets_ever.begin() && s.progs_ever.size() == 1 && s.delivered > v.events_sent)
      VIOLATION("PMU_READ: sent %llu but its one monitor read %llu", v.events_sent, s.delivered);
  Count("pmu nl program books checked");
}

// Malformed or odd messages; only the errno set and the answer are checked.
void NlMalformed(Rng& r, NlScene& sc, NlSock& s, int some_fd) {
  const uint32_t other_fd = uint32_t(r.Edgy());
  // Whatever program these numbers name may get this socket as its monitor.
  std::lock_guard<std::mutex> l(g_prog_mu);
  for (int fd : {some_fd, int(other_fd)}) {
    auto it = g_prog_fds.find(fd);
    if (it != g_prog_fds.end()) it->second->store(true);
  }
  const uint16_t req = NLM_F_REQUEST | (r.OneIn(4) ? 0 : NLM_F_ACK);
  NlMsg m(sc.family, req, 0, TPROF_PMU_CMD_SUBSCRIBE);
  uint32_t len = 0;
  bool silent = false;
  const char* what;
  switch (r.Below(14)) {
    case 0: what = "no attribute"; break;
    case 1: { uint16_t v = 3; m.Attr(TPROF_PMU_A_PROGRAM_FD, &v, 2); what = "short fd attribute"; break; }
    case 2: { u64 v = uint32_t(some_fd); m.Attr(TPROF_PMU_A_PROGRAM_FD, &v, 8); what = "long fd attribute"; break; }
    case 3: m.U32(TPROF_PMU_A_PROGRAM_FD, uint32_t(some_fd)); m.U32(TPROF_PMU_A_PROGRAM_FD, other_fd); what = "duplicated fd attribute"; break;
    case 4: m.U32(uint16_t(3 + r.Below(0x7ff0)), uint32_t(some_fd)); what = "unknown attribute"; break;
    case 5: m.U32(TPROF_PMU_A_PROGRAM_FD | NLA_F_NESTED, uint32_t(some_fd)); what = "nested flag"; break;
    case 6: {
      std::vector<unsigned char> junk(r.Below(2) ? sizeof(tprof_pmu_event) : sizeof(tprof_pmu_event) + 1 + r.Below(64));
      for (auto& c : junk) c = static_cast<unsigned char>(r.Next());
      m.Attr(TPROF_PMU_A_EVENT, junk.data(), junk.size());
      what = "event attribute sent";
      break;
    }
    case 7: {
      NlMsg o(sc.family, req, 0, uint8_t(r.OneIn(2) ? u64(TPROF_PMU_CMD_EVENT) : r.OneIn(2) ? 0 : 3 + r.Below(253)));
      o.U32(TPROF_PMU_A_PROGRAM_FD, uint32_t(some_fd));
      m = o;
      what = "other command";
      break;
    }
    case 8: {
      NlMsg o(sc.family, uint16_t(req | NLM_F_DUMP), 0, TPROF_PMU_CMD_SUBSCRIBE);
      o.U32(TPROF_PMU_A_PROGRAM_FD, uint32_t(some_fd));
      m = o;
      what = "dump";
      break;
    }
    case 9: {
      // Ids are handed out from the bottom: one near the top is no family.
      NlMsg o(uint16_t(0xffe0 + r.Below(16)), req, 0, 1);
      o.U32(1, uint32_t(some_fd));
      m = o;
      what = "no such family id";
      break;
    }
    case 10:  // nlmsg_len too long or too short for what follows
      m.U32(TPROF_PMU_A_PROGRAM_FD, uint32_t(some_fd));
      len = r.OneIn(2) ? uint32_t(m.b.size() + 4 + r.Below(64)) : uint32_t(NLMSG_HDRLEN + r.Below(GENL_HDRLEN + 4));
      what = "bad nlmsg_len";
      silent = true;
      break;
    case 11: {  // an attribute whose length runs past the message
      m.U32(TPROF_PMU_A_PROGRAM_FD, uint32_t(some_fd));
      uint16_t bad = uint16_t(8 + 4 * (1 + r.Below(100)));
      std::memcpy(m.b.data() + NLMSG_HDRLEN + GENL_HDRLEN, &bad, 2);
      what = "attribute past the end";
      break;
    }
    case 12: {  // 32 KiB of attributes, the fd last
      std::vector<unsigned char> pad(1000, 0x5a);
      for (int i = 0; i < 32; ++i) m.Attr(uint16_t(3 + i), pad.data(), pad.size());
      m.U32(TPROF_PMU_A_PROGRAM_FD, uint32_t(some_fd));
      what = "oversized";
      break;
    }
    default:  // no NLM_F_REQUEST: acknowledged, not handled
      m = NlMsg(sc.family, uint16_t(req & ~NLM_F_REQUEST), 0, TPROF_PMU_CMD_SUBSCRIBE);
      m.U32(TPROF_PMU_A_PROGRAM_FD, uint32_t(some_fd));
      what = "no request flag";
      silent = true;
      break;
  }
  // A subscription this message may make is to some program, maybe not of
  // this scene: the socket's accounting ends.
  (void)NlRequest(sc, s, m, len, kNoProg, silent, what);
}

// Subscribes with a descriptor number that is not (or no longer) one of
// this scene's programs: closed, a device or socket, nonsense, or the
// numbers in /proc/<parent>/fd (another process's, root's when
// unprivileged). Refused with EBADF or EINVAL unless the number is a
// program of this process (another worker's, now stolen).
void NlSubscribeForeign(Rng& r, NlScene& sc, NlSock& s, int dev, int closed_fd) {
  int fd;
  const char* what;
  switch (r.Below(6)) {
    case 0: fd = closed_fd; what = "subscribe closed fd"; break;
    case 1: fd = dev; what = "subscribe device fd"; break;
    case 2: fd = s.fd; what = "subscribe socket fd"; break;
    case 3: fd = int(r.Pick<u64>({~0ULL, 0x7fffffff, 1u << 20, 65535})); what = "subscribe nonsense fd"; break;
    default: fd = 3 + int(r.Below(64)); what = "subscribe parent's fd number"; break;
  }
  std::lock_guard<std::mutex> l(g_prog_mu);
  auto it = g_prog_fds.find(fd);
  bool program = it != g_prog_fds.end();
  if (program) it->second->store(true);
  int err = NlSubscribe(sc, s, fd, kNoProg, what);
  if (err == 0 && (fd == dev || fd == s.fd || fd < 0))
    VIOLATION("pmu nl %s (%d) succeeded: not a program", what, fd);
}

// The unprivileged worker tries to open root's descriptors through /proc:
// holding a descriptor is the permission, so that must fail.
void NlTryParentFds() {
  const uint32_t ppid = uint32_t(::getppid());
  for (int n = 0; n < 16; ++n) {
    std::string path = "/proc/" + std::to_string(ppid) + "/fd/" + std::to_string(n);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    Count("pmu nl open parent's fd " + ErrName(fd < 0 ? errno : 0));
    if (fd >= 0) {
      VIOLATION("opened %s, a descriptor of the root parent, unprivileged", path.c_str());
      ::close(fd);
    }
  }
}

// A child holds the scene's descriptors: it subscribes a socket of its own
// with an inherited program descriptor (that is the permission), reads
// what comes (events of its parent's burner: pid and tid of the parent),
// and exits. The parent's programs may have a new monitor now.
void NlForkSubscriber(Rng& r, NlScene& sc) {
  std::vector<int> fds;
  for (NlProg& p : sc.progs)
    if (p.fd >= 0) {
      fds.push_back(p.fd);
      p.stolen->store(true);
    }
  if (fds.empty()) return;
  const int fd = fds[r.Below(fds.size())];
  const u64 seed = r.Next();
  pid_t pid = ForkOwn();
  if (pid < 0) return;
  if (pid == 0) {
    g_in_child = true;
    AddOwnPid(uint32_t(::getppid()));
    t_op = "pmu nl forked subscriber";
    Rng cr(seed);
    NlScene child;
    child.family = sc.family;
    child.next_seq = 1;
    if (!NlOpenSocket(cr, child)) ::_exit(0);
    NlProg p;
    p.id = child.next_id++;
    p.fd = fd;
    child.progs.push_back(p);
    int err = NlSubscribe(child, child.socks[0], fd, p.id, "child subscribe");
    if (err > 0 && err != ENOMEM && err != EAGAIN)
      VIOLATION("a forked child's subscription with an inherited program descriptor: %s", ErrName(err).c_str());
    for (int i = 0; i < 5; ++i) NlPump(child, child.socks[0], 0, nullptr, 10);
    ::_exit(0);
  }
  if (g_unpriv) AddOwnPid(uint32_t(pid));
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 66) g_violations++;
  else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    VIOLATION("pmu nl forked subscriber ended with status 0x%x", st);
  Count("pmu nl forked subscribers");
}

void OpPmuNetlink(Worker& w) {
  t_op = "pmu netlink";
  Rng& r = w.rng;
  NlScene sc;
  const int family = NlFamily();
  if (family < 0) return;
  sc.family = uint16_t(family);
  if (!sc.family) {
    VIOLATION("generic netlink family %s not found while the module is loaded", TPROF_PMU_GENL_NAME);
    return;
  }
  if (!NlOpenSocket(r, sc)) return;
  int dev = OpenDevice();
  if (dev < 0) {
    ::close(sc.socks[0].fd);
    return;
  }
  std::optional<Burner> burner;
  burner.emplace();
  const uint32_t btid = burner->tid.load();
  for (u64 i = 1 + r.Below(3); i > 0; --i) NlCreateProgram(r, w, sc, dev, btid);
  for (u64 i = r.Below(3); i > 0; --i) NlOpenSocket(r, sc);
  if (g_unpriv && r.OneIn(4)) NlTryParentFds();
  int closed_fd = -1;
  const int steps = 8 + int(r.Below(24));
  for (int step = 0; step < steps; ++step) {
    auto live_prog = [&]() -> NlProg* {
      std::vector<NlProg*> v;
      for (NlProg& p : sc.progs)
        if (p.fd >= 0) v.push_back(&p);
      return v.empty() ? nullptr : v[r.Below(v.size())];
    };
    auto live_sock = [&]() -> NlSock* {
      std::vector<NlSock*> v;
      for (NlSock& s : sc.socks)
        if (s.fd >= 0) v.push_back(&s);
      return v.empty() ? nullptr : v[r.Below(v.size())];
    };
    NlSock* s = live_sock();
    if (!s) {
      if (!NlOpenSocket(r, sc)) break;
      continue;
    }
    switch (r.Below(12)) {
      case 0: case 1: case 2: {  // a program's own descriptor: the permission
        NlProg* p = live_prog();
        if (!p) break;
        int err = NlSubscribe(sc, *s, p->fd, p->id, "subscribe",
                              uint16_t(NLM_F_REQUEST | (r.OneIn(3) ? 0 : NLM_F_ACK)));
        if (err > 0 && err != EAGAIN && err != ENOMEM)
          VIOLATION("pmu nl subscription with the program's own descriptor: %s", ErrName(err).c_str());
        break;
      }
      case 3: NlSubscribeForeign(r, sc, *s, dev, closed_fd); break;
      case 4: {
        NlProg* p = live_prog();
        NlMalformed(r, sc, *s, p ? p->fd : dev);
        break;
      }
      case 5: case 6: NlPump(sc, *s, 0, nullptr, int(r.Below(30))); break;
      case 7:  // events fire meanwhile; receive buffers fill
        std::this_thread::sleep_for(std::chrono::milliseconds(r.Below(40)));
        break;
      case 8:  // close a socket, perhaps a monitor with events in flight
        if (r.OneIn(2)) NlPump(sc, *s, 0, nullptr);
        ::close(s->fd);
        s->fd = -1;
        Count("pmu nl socket closed");
        if (r.OneIn(2)) NlOpenSocket(r, sc);
        break;
      case 9: {  // close a program while it fires
        NlProg* p = live_prog();
        if (!p) break;
        if (r.OneIn(2)) {
          for (NlSock& o : sc.socks)
            if (o.fd >= 0) NlPump(sc, o, 0, nullptr);
          NlCheckBooks(sc, *p);
        }
        closed_fd = p->fd;
        NlCloseProgram(*p);
        Count("pmu nl program closed");
        if (r.OneIn(2)) NlCreateProgram(r, w, sc, dev, btid);
        break;
      }
      case 10:
        if (r.OneIn(3)) NlForkSubscriber(r, sc);
        else if (r.OneIn(2)) NlOpenSocket(r, sc);
        break;
      default:  // the burner stops and starts (a thread program's target exits)
        if (r.OneIn(4)) burner.reset();
        if (!burner) burner.emplace();
        break;
    }
  }
  // The end: programs and sockets close in either order.
  const bool programs_first = r.OneIn(2);
  for (int pass = 0; pass < 2; ++pass) {
    if ((pass == 0) == programs_first) {
      for (NlProg& p : sc.progs)
        if (p.fd >= 0) {
          for (NlSock& o : sc.socks)
            if (o.fd >= 0) NlPump(sc, o, 0, nullptr);
          NlCheckBooks(sc, p);
          NlCloseProgram(p);
        }
    } else {
      for (NlSock& s : sc.socks)
        if (s.fd >= 0) {
          NlPump(sc, s, 0, nullptr);
          ::close(s.fd);
          s.fd = -1;
        }
    }
  }
  burner.reset();
  ::close(dev);
  Count("pmu nl scenes");
}

// A monitor socket closes while its program fires on every page fault,
// and another socket binds the freed port id at once: it never subscribed,
// so no event may reach it (the kernel must not deliver by port id to
// whoever holds it now). Unprivileged, the other socket also tries the
// root parent's port id.
void OpPortIdRace(Worker& w) {
  t_op = "pmu nl port id race";
  Rng& r = w.rng;
  NlScene sc;
  const int family = NlFamily();
  if (family < 0) return;
  sc.family = uint16_t(family);
  int dev = OpenDevice();
  if (!sc.family || dev < 0) {
    if (dev >= 0) ::close(dev);
    return;
  }
  Burner burner(true);
  tprof_pmu_program in{};
  in.scope = TPROF_PMU_SCOPE_THREAD;
  in.pid = burner.tid.load();
  in.nr_counters = 1;
  in.counters[0].kind = TPROF_PMU_EV_SOFTWARE;
  in.counters[0].config = 2;  // page faults
  in.counters[0].threshold = 1;
  in.counters[0].threshold_every = 1;
  NlProg p;
  {
    std::lock_guard<std::mutex> l(g_prog_mu);
    if (::ioctl(dev, TPROF_IOC_PMU_CREATE, &in) != 0) {
      Count("pmu nl port id race create " + ErrName(errno));
      ::close(dev);
      return;
    }
    p.fd = in.fd;
    g_prog_fds[p.fd] = p.stolen;
  }
  p.id = sc.next_id++;
  p.nr_counters = 1;
  sc.progs.push_back(p);
  for (int cycle = 0; cycle < 10; ++cycle) {
    int v = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
    int t = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
    if (v < 0 || t < 0) {
      if (v >= 0) ::close(v);
      if (t >= 0) ::close(t);
      break;
    }
    sockaddr_nl a{};
    a.nl_family = AF_NETLINK;
    a.nl_pid = 0x40000000u + uint32_t(r.Below(0x3fffffff));
    if (::bind(v, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      ::close(v);
      ::close(t);
      continue;
    }
    NlSock vs;
    vs.id = sc.next_id++;
    vs.fd = v;
    vs.portid = a.nl_pid;
    sc.socks.push_back(vs);
    NlSock& victim = sc.socks.back();
    (void)NlSubscribe(sc, victim, p.fd, p.id, "port id race subscribe");
    NlPump(sc, victim, 0, nullptr, 1);
    // The other socket spins on bind() while the monitor closes.
    std::atomic<bool> won{false};
    const uint32_t port = g_unpriv && r.OneIn(4) ? uint32_t(::getppid()) : a.nl_pid;
    std::thread thief([&] {
      sockaddr_nl b{};
      b.nl_family = AF_NETLINK;
      b.nl_pid = port;
      const u64 until = NowNs() + 20'000'000;
      while (NowNs() < until)
        if (::bind(t, reinterpret_cast<sockaddr*>(&b), sizeof(b)) == 0) {
          won = true;
          break;
        }
    });
    ::close(v);
    victim.fd = -1;
    thief.join();
    if (won.load()) {
      Count("pmu nl port id race: freed port id taken");
      NlSock ts;
      ts.id = sc.next_id++;
      ts.fd = t;
      ts.portid = port;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      NlPump(sc, ts, 0, nullptr, 2);  // any event here is a violation
    }
    ::close(t);
  }
  {
    std::lock_guard<std::mutex> l(g_prog_mu);
    g_prog_fds.erase(p.fd);
    ::close(p.fd);
  }
  ::close(dev);
  Count("pmu nl port id races");
}

// The root parent of --unprivileged: a program on its own page faults,
// every one an event, with a monitor socket it closes and reopens (its
// port id, the parent's pid, is what the unprivileged sockets try to bind),
// so that root's events are there to leak.
void RootPmuRound(Rng& r) {
  t_op = "root parent pmu";
  NlScene sc;
  const int family = NlFamily();
  if (family < 0) return;
  sc.family = uint16_t(family);
  int dev = OpenDevice();
  if (!sc.family || dev < 0) {
    if (dev >= 0) ::close(dev);
    return;
  }
  tprof_pmu_program in{};
  in.scope = TPROF_PMU_SCOPE_PROCESS;
  in.nr_counters = 1;
  in.counters[0].kind = TPROF_PMU_EV_SOFTWARE;
  in.counters[0].config = 2;  // page faults
  in.counters[0].threshold = 1;
  in.counters[0].threshold_every = 1;
  // A breakpoint in this binary, which the unprivileged workers run and
  // probe too (on arm64 one uprobe with their consumers): root's hits must
  // not reach them.
  const bool bp = r.OneIn(2);
  if (bp) {
    in.nr_counters = 2;
    in.counters[1].kind = TPROF_PMU_EV_BREAKPOINT;
    in.counters[1].addr = u64(uintptr_t(&tprof_fuzz_spin));
    in.counters[1].threshold = 1;
    in.counters[1].threshold_every = 1;
  }
  if (::ioctl(dev, TPROF_IOC_PMU_CREATE, &in) != 0 &&
      (!bp || (in.nr_counters = 1, ::ioctl(dev, TPROF_IOC_PMU_CREATE, &in) != 0))) {
    ::close(dev);
    return;
  }
  NlProg p;
  p.id = sc.next_id++;
  p.fd = in.fd;
  p.scope = in.scope;
  p.nr_counters = in.nr_counters;
  // This process has one thread; but on arm64 its process breakpoint also
  // counts its descendants, the unprivileged workers, wherever their own
  // probes put the same uprobe into their memory.
  p.single_producer = in.nr_counters == 1;
  sc.progs.push_back(p);
  for (int round = 0; round < 20; ++round) {
    NlSock* s = nullptr;
    for (NlSock& o : sc.socks)
      if (o.fd >= 0) s = &o;
    if (!s) {
      if (!NlOpenSocket(r, sc, true)) break;
      s = &sc.socks.back();
      (void)NlSubscribe(sc, *s, p.fd, p.id, "root subscribe");
    }
    void* m = ::mmap(nullptr, size_t(kPage) * 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
      for (int i = 0; i < 16; ++i) static_cast<volatile char*>(m)[i * kPage] = 1;
      ::munmap(m, size_t(kPage) * 16);
    }
    for (int i = 0; i < 8; ++i) tprof_fuzz_spin(2);
    if (r.OneIn(2)) NlPump(sc, *s, 0, nullptr, 5);
    if (r.OneIn(4)) {  // the port id is free for a while; events meanwhile are lost
      ::close(s->fd);
      s->fd = -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ::close(p.fd);
  for (NlSock& o : sc.socks)
    if (o.fd >= 0) ::close(o.fd);
  ::close(dev);
}

// ---- execution breakpoints: arm64's uprobes (and, at kernel addresses, kprobes) ----------
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
  Rng r(g_opt.seed * 7 + 3);
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

// What scenes in files of their own use of the core (fuzz.h).
namespace tprof_fuzz {
void ReportViolation(const char* msg) { VIOLATION("%s", msg); }
void ChildReportedViolation() { g_violations++; }
void MarkForkedChild() { g_in_child = true; }
void CountStat(const std::string& what, uint64_t n) { Count(what, n); }
void SetOp(const char* name) { t_op = name; }
bool Unprivileged() { return g_unpriv; }
uint64_t MonotonicNs() { return NowNs(); }
std::string ErrnoName(int e) { return ErrName(e); }
std::string DescribeProcess(uint32_t pid) { return DescribePid(pid); }
int OpenTprof() { return OpenDevice(); }
int PerfParanoidLevel() { return PerfParanoid(); }
pid_t ForkOwnProcess() {
  pid_t pid = ForkOwn();
  if (pid > 0 && g_unpriv) AddOwnPid(uint32_t(pid));
  return pid;
}
}  // namespace tprof_fuzz

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
      const int paranoid = Rng(g_opt.seed * 17 + 3).Pick<int>({1, 2, 2, 3});
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
      Rng r(g_opt.seed * 13 + 5);
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
