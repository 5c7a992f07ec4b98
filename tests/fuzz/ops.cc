// tprof_fuzz: the workers' operations (WorkerMain in tprof_fuzz.cc picks
// them by weight): the accountant's whole session and its books; mmaps of
// the buffers and self pages; sessions, descriptors, polls, metrics,
// short-lived threads, drains and forks on the shared descriptors; and the
// fault handlers that let a read of a mapping fault and be caught.
#include "core.h"

#include <execinfo.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <thread>
#include <vector>

namespace tprof_fuzz::core {

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

namespace {
std::atomic<bool> g_accountant_busy{false};
// Set while the accountant waits for the one session; shared with the root
// parent of --unprivileged (MAP_SHARED), which then starts none.
std::atomic<int> g_want_session_local{0};
}  // namespace

std::atomic<int>* g_want_session = &g_want_session_local;
std::atomic<u64> g_accounts_done{0};

namespace {
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
}  // namespace

// One whole session on a private descriptor; checks the books.

// AGGREGATE: every CPU's counts into the books' delivered samples (with
// AGGREGATE_RECORDS the records are the delivered samples: the counts are
// a copy of them).
void TakeAggregates(int fd, const tprof_sampling_config& cfg, Books* books) {
  if (!(cfg.flags & TPROF_SAMPLING_AGGREGATE)) return;
  if (cfg.flags & TPROF_SAMPLING_STACKS) Count("accountant sessions counting stacks", 1);
  std::vector<tprof_aggregate_entry> entries(cfg.aggregate_slots);
  for (uint32_t cpu = 0; cpu < cfg.nr_cpu_ids; ++cpu) {
    tprof_aggregate_read rd{};
    rd.cpu = cpu;
    rd.max_entries = cfg.aggregate_slots;
    rd.entries = u64(uintptr_t(entries.data()));
    int err = RawIoctl("SAMPLING_AGGREGATE_READ", fd, TPROF_IOC_SAMPLING_AGGREGATE_READ, &rd);
    if (err == EINVAL && long(cpu) >= ::sysconf(_SC_NPROCESSORS_CONF)) continue;  // not possible
    if (err) {
      VIOLATION("accountant: AGGREGATE_READ of cpu %u of its own session: %s", cpu, ErrName(err).c_str());
      continue;
    }
    if (!(cfg.flags & TPROF_SAMPLING_AGGREGATE_RECORDS)) books->delivered[cpu] += rd.samples;
    Count("accountant aggregated samples", rd.samples);
  }
}

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
  // Most sessions with stacks walk with the tables it feeds them.
  if ((cfg.flags & TPROF_SAMPLING_STACKS) && !r.OneIn(3)) cfg.flags |= TPROF_SAMPLING_USER_CFI;
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
    if (!lazy) TakeAggregates(fd, cfg, &books);
    if (in.flags & TPROF_SAMPLING_USER_CFI) FeedUnwindTables(w, fd);
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
  TakeAggregates(fd, cfg, &books);
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

namespace {
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
}  // namespace

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

namespace {
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
}  // namespace

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
      Rng r(seed + u64(i), kWorkerStream);
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
    Rng r(seed, kWorkerStream);
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

}  // namespace tprof_fuzz::core
