// tprof_fuzz's core (see tprof_fuzz.cc for the fuzzer, core.h for what the
// files share): basics, statistics, the process tree the unprivileged
// worker owns, hostile pointers, the /dev/tprof descriptors shared between
// workers; and what the scenes in files of their own (fuzz.h) use of it.
#include "core.h"
#include "fuzz.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>
#include <set>
#include <string>

namespace tprof_fuzz::core {

// ---- basics ------------------------------------------------------------------

namespace {
constexpr u64 kKernelPtr = 0xffff800000000000ULL;
}  // namespace

const long kPage = ::sysconf(_SC_PAGESIZE);

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

std::string ErrName(int e) {
  if (e == 0) return "ok";
  const char* n = ::strerrorname_np(e);
  return n ? n : std::to_string(e);
}

// ---- statistics (what was exercised) ----------------------------------------------

std::mutex g_stats_mu;
std::map<std::string, u64> g_stats;
void Count(const std::string& what, u64 n) {
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
// bitmap over every pid, mapped before any fork (main). The root parent
// adds none. (A ring of the last 1000 forgot a long-lived stranger once a
// 40 s run had forked 1000 more: seed 4242 then judged its events foreign.)

namespace {
constexpr size_t kSharedPidBits = size_t(1) << 22;  // PID_MAX_LIMIT on 64-bit
std::atomic<uint64_t>* g_shared_pids = nullptr;
}  // namespace

void MapSharedPids() {
  const size_t bytes = kSharedPidBits / 8;
  void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return;
  g_shared_pids = new (m) std::atomic<uint64_t>[kSharedPidBits / 64]();
}
void AddSharedPid(uint32_t pid) {
  if (g_shared_pids && pid < kSharedPidBits)
    g_shared_pids[pid / 64].fetch_or(uint64_t(1) << (pid % 64));
}
bool IsOwnPid(uint32_t pid) {
  if (pid == uint32_t(::getpid())) return true;
  if (g_shared_pids && pid < kSharedPidBits &&
      (g_shared_pids[pid / 64].load(std::memory_order_relaxed) & (uint64_t(1) << (pid % 64))))
    return true;
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

Arena g_arena;

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

std::mutex g_pool_mu;
std::vector<FdRef> g_pool;  // at most kPoolMax

namespace {
constexpr size_t kPoolMax = 12;
}  // namespace

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

std::mutex g_maps_mu;
std::vector<Mapping> g_maps;

int OpenDevice(int flags) {
  int fd = ::open(TPROF_DEVICE_PATH, flags | O_CLOEXEC);
  return fd;
}

}  // namespace tprof_fuzz::core

// What scenes in files of their own use of the core (fuzz.h).
namespace tprof_fuzz {
using namespace core;

void ReportViolation(const char* msg) { VIOLATION("%s", msg); }
void ReportViolationf(const char* fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  ReportViolation(msg);
}
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
