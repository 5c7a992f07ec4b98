// The core of tprof_fuzz (tests/fuzz/): what its files share. Each
// section below names the file that holds its definitions; the types, the
// VIOLATION macro and EmbeddedPtr (a template) are here. Everything is in
// tprof_fuzz::core; what only one file uses stays in that file's anonymous
// namespace. The scenes of scenes_exec.cc use the core through fuzz.h
// instead (its side of the core is in core.cc).
#pragma once

#include <linux/tprof.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "rng.h"

namespace tprof_fuzz::core {

// ---- basics (core.cc) ------------------------------------------------------------

using u64 = unsigned long long;  // what __u64 is: one printf format (%llu) for all
using ::tprof_fuzz::kWorkerStream;
using ::tprof_fuzz::Rng;

// arm64: a user breakpoint of tprof's where another program of tprof's has
// one of the other kind (a uprobe vs. a debug register) is EBUSY; elsewhere
// no PMU_CREATE is (0 never matches an errno).
#if defined(__aarch64__)
constexpr int kBreakpointBusy = EBUSY;
#else
constexpr int kBreakpointBusy = 0;
#endif
extern const long kPage;

struct Options {
  u64 seed = 0;
  double seconds = 30;
  int threads = 4;
  bool unprivileged = false;
  bool module_cycles = true;
  bool verbose = false;
};
extern Options g_opt;

extern std::atomic<u64> g_violations;
extern std::atomic<bool> g_stop;
extern std::atomic<bool> g_in_child;  // forked children report with write(2) and _exit(66)
extern bool g_unpriv;                 // this process is the unprivileged worker

u64 NowNs();
uint32_t Gettid();

// Output without stdio locks (safe in forked children of a threaded process).
void Say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

extern thread_local const char* t_op;  // the operation, for messages
// Parsing a buffer another thread may hand back meanwhile: exercise only.
extern thread_local bool t_quiet;

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

std::string ErrName(int e);

// ---- statistics (what was exercised; core.cc) ------------------------------------

extern std::mutex g_stats_mu;
extern std::map<std::string, u64> g_stats;
void Count(const std::string& what, u64 n = 1);

// ---- the process tree the unprivileged worker owns (core.cc) ----------------------

extern std::mutex g_own_mu;
extern std::set<uint32_t> g_own_pids;
void AddOwnPid(uint32_t pid);
void MapSharedPids();  // the ring of the workers' forks (main, before any fork)
void AddSharedPid(uint32_t pid);
bool IsOwnPid(uint32_t pid);
pid_t ForkOwn();
bool IsOwnPidSettled(uint32_t pid);
bool DescendsFrom(uint32_t pid, uint32_t ancestor);
std::string DescribePid(uint32_t pid);

// Any u64 field of an unprivileged output that looks like a kernel pointer.
// ranges: {offset, bytes} runs of u64 fields of the struct at p.
struct U64s {
  size_t off, bytes;
};
#define U64F(type, field) U64s{offsetof(type, field), sizeof(type::field)}
void CheckNoKernelPointers(const char* what, const void* p, std::initializer_list<U64s> ranges);
bool AllZero(const void* p, size_t n);

// ---- pointers (core.cc) -----------------------------------------------------------

// Fixed hostile addresses and pages set up once.
struct Arena {
  char* ro = nullptr;        // a read-only zero page
  char* none = nullptr;      // a PROT_NONE page
  char* rw_then_none = nullptr;  // a RW page followed by a PROT_NONE page
};
extern Arena g_arena;
void SetUpArena();

enum class PtrKind { kValid, kNull, kLow, kNone, kReadOnly, kStraddle, kKernel, kNonCanonical, kOdd };
const char* PtrKindName(PtrKind k);
PtrKind RandomBadPtr(Rng& r);
// Readable / writable for the kernel?
bool Readable(PtrKind k);
bool Writable(PtrKind k);
u64 HostilePtr(Rng& r, PtrKind k, size_t bytes);

// ---- /dev/tprof descriptors shared between workers (core.cc) ---------------------

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

extern std::mutex g_pool_mu;
extern std::vector<FdRef> g_pool;  // at most kPoolMax
FdRef PoolPick(Rng& r);
void PoolAdd(FdRef f);
FdRef PoolTake(Rng& r);
std::vector<FdRef> PoolRefs();

// Mappings of the device shared between workers (munmap'd by anyone).
struct Mapping {
  char* addr;
  size_t len;
  bool self_page;
};
extern std::mutex g_maps_mu;
extern std::vector<Mapping> g_maps;
constexpr size_t kMapsMax = 24;

int OpenDevice(int flags = O_RDWR);

// ---- one ioctl, checked (ioctls.cc) ----------------------------------------------

constexpr size_t kCanary = 64;  // bytes after a struct or array the kernel must not touch
constexpr unsigned char kCanaryByte = 0xA5;

// A thread's scratch: the argument struct, and embedded arrays with canaries.
struct Scratch {
  alignas(64) unsigned char arg[4096];
  alignas(64) unsigned char array[64 * 1024 + kCanary];
};
extern thread_local Scratch* t_scratch;

struct Call {
  // What the fill step did.
  bool must_fail = false;     // a defect the header says fails (reserved, flags, ...)
  std::string defect;         // for messages
  PtrKind embedded = PtrKind::kValid;  // an embedded pointer's kind (if any)
  size_t embedded_bytes = 0;  // bytes the kernel may write at a valid embedded pointer
  bool embedded_used = false;
};

struct Worker {
  int index;
  Rng rng;
  std::vector<Mapping> self_pages;  // this thread's own self pages
  explicit Worker(int i, u64 seed) : index(i), rng(seed, kWorkerStream) {}
};

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

void CheckDrain(Worker&, const void* i, const void* o, const Call& c);
// mode 0: anything; 1: mostly valid; 2: valid.
void FillSamplingConfig(Rng& r, tprof_sampling_config* in, Call& c, int mode);
void CheckSamplingConfigOut(const char* what, const tprof_sampling_config* in, const tprof_sampling_config* out);
extern "C" void tprof_fuzz_spin(int n);  // breakpoint target and busy work
void FillWindowAdd(Rng& r, Worker&, void* a, Call& c);
extern volatile u64 g_pmu_word;  // what watchpoints watch
void FillPmuCreate(Rng& r, Worker&, void* a, Call& c);
int RawIoctl(const char* name, int fd, unsigned long cmd, void* arg);
void FuzzIoctl(Worker& w, int fd);
void FeedUnwindTables(Worker& w, int fd);

// ---- records (records.cc) ------------------------------------------------------------

struct Books {
  std::vector<u64> delivered;    // SAMPLE records per CPU buffer
  std::vector<u64> lost_in_recs; // LOST records' lost_samples per CPU
  std::vector<u64> last_seq;
};

// Address spaces samples named lately (records.cc), for UNWIND_SPACE calls
// that hit live walks.
void NoteSpace(u64 space_id);
u64 RecentSpace(Rng& r);

int ConsumeHalves(int fd, const char* map, uint32_t nr_cpu, uint32_t ctl_bytes, uint32_t half_bytes,
                  Books* books, uint32_t session_pid, bool release);

// ---- operations (ops.cc) ---------------------------------------------------------------

void Burn(u64 ns);
int PerfParanoid();
// Set while the accountant waits for the one session (MAP_SHARED with the
// root parent of --unprivileged once main maps it).
extern std::atomic<int>* g_want_session;
extern std::atomic<u64> g_accounts_done;
int TouchCatching(const char* p);
void OnFault(int sig, siginfo_t* si, void* uc);
void OnAbort(int sig);
void OpAccountant(Worker& w);
void OpMmap(Worker& w);
void OpUnmap(Worker& w);
void OpSelfPage(Worker& w);
void OpSession(Worker& w);
void OpFds(Worker& w);
void OpPoll(Worker& w);
void OpMetrics(Worker& w);
void OpThread(Worker& w);
void OpDrain(Worker& w);
void OpFork(Worker& w);
void OpIoctl(Worker& w);

// ---- PMU programs and their generic netlink family (pmu_netlink.cc) ---------------------
// (the scene's parts that probes.cc uses too: pmu_netlink.h)

void OpPmuNetlink(Worker& w);
void OpPortIdRace(Worker& w);
void RootPmuRound(Rng& r);  // the root parent of --unprivileged

// ---- execution breakpoints (probes.cc) ---------------------------------------------------

void OpProbes(Worker& w);

}  // namespace tprof_fuzz::core
