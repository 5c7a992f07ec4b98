#include "tprof/device/self_meter.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace tprof {

namespace {

// Bumped in a forked child: its self pages were not inherited (VM_DONTCOPY).
std::atomic<uint64_t> g_fork_generation{0};

void OnForkChild() { g_fork_generation.fetch_add(1, std::memory_order_relaxed); }

// The counter the kernel stamps tsc_in with: the TSC, or on arm64 the
// generic timer's virtual counter (isb: not read ahead of earlier loads).
uint64_t ReadTsc() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#elif defined(__aarch64__)
  uint64_t v;
  __asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
  return v;
#else
  return 0;
#endif
}

template <typename T>
T LoadAcquire(const T* p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

template <typename T>
T LoadRelaxed(const T* p) {
  return __atomic_load_n(p, __ATOMIC_RELAXED);
}

}  // namespace

Expected<SelfMeter> SelfMeter::Open(const Device& device) {
  static std::once_flag at_fork_once;
  std::call_once(at_fork_once, [] { ::pthread_atfork(nullptr, nullptr, OnForkChild); });

  const size_t len = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void* addr = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, device.fd(),
                      static_cast<off_t>(TPROF_SELF_PAGE_OFFSET));
  if (addr == MAP_FAILED) {
    int err = errno;
    switch (err) {
      case ENODATA:
        return Error::FromErrno(err, "mapping this thread's self page: per-thread metrics are off "
                                     "(ENODATA)");
      case ESRCH:
        return Error::FromErrno(err, "mapping this thread's self page: the thread is not tracked "
                                     "(table full: load the module with a larger max_threads=)");
      case EDQUOT:
        return Error::FromErrno(err, "mapping this thread's self page: your user has the "
                                     "module's self_pages_per_user mappings (EDQUOT: unmap "
                                     "some, or have root raise /sys/module/tprof/parameters/"
                                     "self_pages_per_user)");
      case EINVAL:
      case ENODEV:
        return Error::FromErrno(EOPNOTSUPP, "mapping this thread's self page: the module has no "
                                            "self pages (ABI 1.4 or later needed)");
      default:
        return Error::FromErrno(err, std::string("mapping this thread's self page: ") +
                                         std::strerror(err));
    }
  }
  SelfMeter meter{ScopedMapping(addr, len)};
  const tprof_self_page* p = meter.page();
  if (p->time_index != TPROF_SELF_NO_TIME && !(p->flags & TPROF_SELF_TSC))
    return Error::FromErrno(EOPNOTSUPP, "no usable TSC for the self page's time: use "
                                        "Device::ReadSelf (the READ_SELF ioctl) instead");
  if (Status s = meter.ReadTotals(meter.last_); !s.ok()) return s.error();
  return meter;
}

SelfMeter::SelfMeter(ScopedMapping map)
    : map_(std::move(map)),
      fork_generation_(g_fork_generation.load(std::memory_order_relaxed)) {
  const tprof_self_page* p = page();
  identity_ = p->identity;
  tid_ = p->tid;
  nr_metrics_ = p->nr_metrics < TPROF_MAX_METRICS ? p->nr_metrics : TPROF_MAX_METRICS;
  time_index_ = p->time_index < nr_metrics_ ? static_cast<int>(p->time_index) : -1;
}

SelfMeter::~SelfMeter() {
  if (fork_generation_ != g_fork_generation.load(std::memory_order_relaxed)) map_.Abandon();
}

Status SelfMeter::ReadTotals(uint64_t (&totals)[TPROF_MAX_METRICS]) const {
  if (!map_.data()) return Error::FromErrno(EBADF, "self meter: not open");
  if (fork_generation_ != g_fork_generation.load(std::memory_order_relaxed))
    return Error::FromErrno(ECHILD, "self meter: pages are not inherited across fork: "
                                    "open a new SelfMeter in the child");
  const tprof_self_page* p = page();
  uint32_t seq;
  uint32_t flags;
  uint64_t tsc_in;
  uint64_t now;
  do {
    seq = LoadAcquire(&p->seq);
    if (seq & 1) continue;  // the kernel is writing (this thread is off the CPU)
    flags = LoadRelaxed(&p->flags);
    tsc_in = LoadRelaxed(&p->tsc_in);
    for (uint32_t m = 0; m < nr_metrics_; ++m) totals[m] = LoadRelaxed(&p->total[m]);
    now = ReadTsc();
  } while ((seq & 1) || LoadAcquire(&p->seq) != seq);
  for (uint32_t m = nr_metrics_; m < TPROF_MAX_METRICS; ++m) totals[m] = 0;
  if (!(flags & TPROF_SELF_LIVE))
    return Error::FromErrno(ENODATA, "self meter: accounting stopped or restarted: open a new "
                                     "SelfMeter when it is on again");
  // Without TPROF_SELF_TSC the time is the odometer as of the last switch
  // or charge.
  if (time_index_ >= 0 && (flags & TPROF_SELF_TSC) && now > tsc_in) {
    const unsigned __int128 cycles = now - tsc_in;
    totals[time_index_] += static_cast<uint64_t>((cycles * p->tsc_mult) >> p->tsc_shift);
  }
  return OkStatus();
}

Status SelfMeter::Read(uint64_t (&delta)[TPROF_MAX_METRICS]) {
  uint64_t totals[TPROF_MAX_METRICS];
  if (Status s = ReadTotals(totals); !s.ok()) return s;
  for (uint32_t m = 0; m < TPROF_MAX_METRICS; ++m) {
    if (totals[m] > last_[m]) {
      delta[m] = totals[m] - last_[m];
      last_[m] = totals[m];
    } else {
      delta[m] = 0;
    }
  }
  return OkStatus();
}

}  // namespace tprof
