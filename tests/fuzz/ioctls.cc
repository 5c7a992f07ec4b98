// tprof_fuzz: one ioctl, checked. kIoctls is the table of every ioctl of
// uapi/linux/tprof.h (adding an ioctl is one entry): a filler of mostly
// valid arguments with random defects and a checker of its outputs; the
// errnos it may return are its rows in uapi/linux/tprof_errors.h.
// FuzzIoctl makes one call from it, with valid, boundary or broken
// arguments and encodings.
#include "core.h"

#include <linux/perf_event.h>
#include <linux/tprof_errors.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace tprof_fuzz::core {

// ---- one ioctl, checked --------------------------------------------------------

thread_local Scratch* t_scratch = nullptr;

namespace {
using FillFn = void (*)(Rng&, Worker&, void* arg, Call&);
using CheckFn = void (*)(Worker&, const void* in, const void* out, const Call&);

struct IoctlSpec {
  const char* name;
  unsigned long cmd;
  bool privileged_only;     // CAP_PERFMON or CAP_SYS_ADMIN, whatever the argument
  FillFn fill;              // a mostly valid argument, with random defects
  CheckFn check;            // outputs of a successful call
};

void MaybeDefectReserved(Rng& r, Call& c, void* field, size_t bytes, const char* name) {
  if (!r.OneIn(6)) return;
  unsigned char* p = static_cast<unsigned char*>(field);
  p[r.Below(bytes)] = static_cast<unsigned char>(1 + r.Below(255));
  c.must_fail = true;
  c.defect = std::string("nonzero ") + name;
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
}  // namespace

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
    if (r.OneIn(3)) {  // user stack copies (ABI 1.18): at most a quarter of the smallest half
      in->flags |= TPROF_SAMPLING_USER_STACK;
      in->user_stack_bytes = uint32_t(r.Pick<u64>({8, 256, 1024}));
    }
    if (r.OneIn(3)) in->flags |= TPROF_SAMPLING_USER_CFI;  // unwind tables (ABI 1.19)
  }
  if (r.OneIn(5)) {
    in->frequency_hz = 0;
    in->event_type = TPROF_METRIC_SOFTWARE;
    in->event_config = r.Pick<u64>({0, 1, 2, 3});
    in->event_period = r.Pick<u64>({1, 10, 1000, 100000});
  } else if (r.OneIn(4)) {  // in the scheduler tick (ABI 1.21): at HZ, no frequency
    in->frequency_hz = 0;
    in->event_type = TPROF_SAMPLE_ON_TICK;
  }
  // Counted in the module (ABI 1.21), by stack too (1.22): not with a
  // caller alone, copies only with tables.
  if (r.OneIn(4) && (!(in->flags & TPROF_SAMPLING_USER_STACK) || (in->flags & TPROF_SAMPLING_USER_CFI))) {
    in->flags = (in->flags & (TPROF_SAMPLING_STACKS | TPROF_SAMPLING_USER_CFI | TPROF_SAMPLING_USER_STACK)) |
                TPROF_SAMPLING_AGGREGATE | (r.OneIn(3) ? TPROF_SAMPLING_AGGREGATE_RECORDS : 0);
    in->aggregate_slots = uint32_t(r.Pick<u64>({0, 64, 1024, 16384}));
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
  switch (r.Below(13)) {
    case 0: in->half_bytes = uint32_t(r.Edgy()); break;
    case 1: in->frequency_hz = uint32_t(r.Edgy()); break;
    case 2: in->event_type = uint32_t(r.Below(8)); in->event_period = r.Edgy(); in->event_config = r.Edgy(); break;
    case 3:  // any bits, with at least one the ABI does not define (bit 6 up)
      in->flags = uint32_t(r.Edgy()) | (0x40u << r.Below(26));
      c.must_fail = true;
      c.defect = "unknown flags";
      break;
    case 4: in->half_bytes = TPROF_SAMPLING_MAX_HALF_BYTES * 2; c.must_fail = true; c.defect = "half_bytes > max"; break;
    case 5: in->half_bytes = 4096 + 8; c.must_fail = true; c.defect = "half_bytes not a power of two"; break;
    case 6: in->frequency_hz = TPROF_SAMPLING_MAX_HZ + 1; in->event_type = 0; c.must_fail = true; c.defect = "frequency > max"; break;
    case 7:
      in->stack_depth = r.OneIn(2) ? TPROF_MAX_STACK_DEPTH + 1 + uint32_t(r.Below(100)) : 1 + uint32_t(r.Below(100));
      in->flags |= r.OneIn(2) ? 0 : TPROF_SAMPLING_STACKS;
      c.must_fail = !(in->flags & TPROF_SAMPLING_STACKS) || in->stack_depth > TPROF_MAX_STACK_DEPTH;
      c.defect = "stack_depth";
      break;
    case 8: {  // user_stack_bytes: only with USER_STACK and STACKS, 8-aligned, bounded
      in->user_stack_bytes = uint32_t(r.Pick<u64>({0, 8, 12, 1024, 16384, TPROF_MAX_USER_STACK_BYTES,
                                                   TPROF_MAX_USER_STACK_BYTES + 8}));
      if (r.OneIn(2)) in->flags |= TPROF_SAMPLING_USER_STACK;
      const bool stacks = in->flags & TPROF_SAMPLING_STACKS;
      const uint32_t half = in->half_bytes ? in->half_bytes : TPROF_SAMPLING_DEFAULT_HALF_BYTES;
      const uint32_t bytes = in->user_stack_bytes;
      c.must_fail = (in->flags & TPROF_SAMPLING_USER_STACK)
                        ? !stacks || !bytes || bytes % 8 || bytes > TPROF_MAX_USER_STACK_BYTES ||
                              bytes > half / 4
                        : bytes != 0;
      c.defect = "user_stack_bytes";
      break;
    }
    case 9:
      in->cpus_bytes = r.Pick<uint32_t>({4, 12, TPROF_SAMPLING_MAX_CPUS_BYTES + 8});
      if (!in->cpus) in->cpus = u64(uintptr_t(t_scratch->array));
      c.must_fail = true;
      c.defect = "cpus_bytes";
      break;
    case 10:
      in->event_type = TPROF_SAMPLE_ON_TICK;
      in->frequency_hz = 1 + uint32_t(r.Below(TPROF_SAMPLING_MAX_HZ));
      in->event_period = r.OneIn(2) ? 0 : r.Edgy();
      c.must_fail = true;
      c.defect = "a frequency for the tick";
      break;
    case 11:  // aggregation: not with callers or copies without tables, slots a power of two in range
      in->flags = TPROF_SAMPLING_AGGREGATE |
                  uint32_t(r.Pick<u64>({TPROF_SAMPLING_STACKS, TPROF_SAMPLING_CALLERS,
                                        TPROF_SAMPLING_STACKS | TPROF_SAMPLING_USER_STACK,
                                        TPROF_SAMPLING_STACKS | TPROF_SAMPLING_USER_STACK |
                                            TPROF_SAMPLING_USER_CFI,
                                        0, 0}));
      in->stack_depth = (in->flags & TPROF_SAMPLING_STACKS) ? 8 : 0;
      in->user_stack_bytes = (in->flags & TPROF_SAMPLING_USER_STACK) ? 256 : 0;
      in->aggregate_slots = uint32_t(r.Pick<u64>({0, 1, 63, 96, TPROF_AGGREGATE_MAX_SLOTS * 2, r.Edgy()}));
      if (r.OneIn(4)) {
        in->flags = TPROF_SAMPLING_AGGREGATE_RECORDS;
        in->aggregate_slots = 0;
      }
      {
        const uint32_t n = in->aggregate_slots;
        c.must_fail = !(in->flags & TPROF_SAMPLING_AGGREGATE) ||
                      (in->flags & TPROF_SAMPLING_CALLERS) ||
                      ((in->flags & TPROF_SAMPLING_USER_STACK) && !(in->flags & TPROF_SAMPLING_USER_CFI)) ||
                      (n && (n < TPROF_AGGREGATE_MIN_SLOTS || n > TPROF_AGGREGATE_MAX_SLOTS ||
                             (n & (n - 1))));
      }
      c.defect = "aggregation settings";
      break;
    default: MaybeDefectReserved(r, c, in->resv, sizeof(in->resv), "resv"); break;
  }
  if (r.OneIn(4))  // output fields are ignored on input
    for (size_t k = offsetof(tprof_sampling_config, nr_cpu_ids); k < offsetof(tprof_sampling_config, cpus); ++k)
      reinterpret_cast<unsigned char*>(in)[k] = static_cast<unsigned char>(r.Next());
}

namespace {
void FillSamplingStart(Rng& r, Worker&, void* a, Call& c) {
  FillSamplingConfig(r, static_cast<tprof_sampling_config*>(a), c, 0);
}
bool IsPow2(u64 v) { return v && !(v & (v - 1)); }
}  // namespace

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
  if ((in->event_type == TPROF_SAMPLE_ON_CLOCK || in->event_type == TPROF_SAMPLE_ON_TICK) &&
      (out->frequency_out == 0 || out->frequency_out > TPROF_SAMPLING_MAX_HZ))
    VIOLATION("%s: frequency_out %u", what, out->frequency_out);
  if (g_unpriv && in->pid == TPROF_PID_ALL) VIOLATION("%s: system-wide sampling started unprivileged", what);
  if (g_unpriv && in->pid != 0 && !IsOwnPid(in->pid))
    VIOLATION("%s: unprivileged sampling of process %u (not its own) started", what, in->pid);
  CheckNoKernelPointers(what, out, {U64F(tprof_sampling_config, map_bytes), U64F(tprof_sampling_config, resv)});
}

namespace {
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
void FillAggregateRead(Rng& r, Worker&, void* a, Call& c) {
  auto* in = static_cast<tprof_aggregate_read*>(a);
  std::memset(in, 0, sizeof(*in));
  in->cpu = uint32_t(r.OneIn(4) ? r.Edgy() : r.Below(4));
  in->max_entries = uint32_t(r.OneIn(4) ? r.Edgy() : r.Pick<u64>({64, 1024, 2048, 16384}));
  in->entries = EmbeddedPtr(r, c, sizeof(tprof_aggregate_entry), in->max_entries);
  MaybeDefectReserved(r, c, in->resv, sizeof(in->resv), "resv");
}
// What a session's counts may hold: flags the kernel writes, a count for
// every entry, no kernel address withheld by HIDDEN, only the unprivileged
// caller's own processes.
void CheckAggregateRead(Worker&, const void*, const void* o, const Call& c) {
  auto* out = static_cast<const tprof_aggregate_read*>(o);
  if (out->nr_entries > out->max_entries || !AllZero(out->resv, sizeof(out->resv)) ||
      out->end_ns < out->start_ns)
    VIOLATION("AGGREGATE_READ: %u entries of %u, resv %d, span %llu..%llu", out->nr_entries,
              out->max_entries, !AllZero(out->resv, sizeof(out->resv)), out->start_ns, out->end_ns);
  if (c.embedded != PtrKind::kValid) return;
  u64 sum = 0;
  const auto* e = reinterpret_cast<const tprof_aggregate_entry*>(t_scratch->array);
  for (uint32_t i = 0; i < out->nr_entries && (i + 1) * sizeof(*e) <= c.embedded_bytes; ++i) {
    sum += e[i].count;
    // With STACK_KEY, ip is a stack's key, and a kernel sample's stack has a space.
    const bool keyed = e[i].flags & TPROF_SAMPLE_STACK_KEY;
    if (!e[i].count ||
        (e[i].flags & ~uint32_t(TPROF_SAMPLE_USER | TPROF_SAMPLE_IDLE | TPROF_SAMPLE_HIDDEN |
                                TPROF_SAMPLE_STACK_KEY)) ||
        ((e[i].flags & TPROF_SAMPLE_HIDDEN) && e[i].ip && !keyed) ||
        (!(e[i].flags & TPROF_SAMPLE_USER) && e[i].space_id && !keyed))
      VIOLATION("AGGREGATE_READ entry: pid %u flags 0x%x ip 0x%llx space %llx count %llu", e[i].pid,
                e[i].flags, e[i].ip, e[i].space_id, e[i].count);
    if (g_unpriv && (e[i].pid == 0 || !IsOwnPidSettled(e[i].pid)))
      VIOLATION("AGGREGATE_READ: counts of pid %u (not the unprivileged caller's own)", e[i].pid);
    if (g_unpriv && !(e[i].flags & TPROF_SAMPLE_USER) && !(e[i].flags & TPROF_SAMPLE_HIDDEN))
      VIOLATION("AGGREGATE_READ: a kernel address 0x%llx shown to the unprivileged caller", e[i].ip);
  }
  if ((out->nr_entries + 1) * sizeof(*e) <= c.embedded_bytes && sum != out->samples)
    VIOLATION("AGGREGATE_READ: entries sum to %llu, samples says %llu", sum, out->samples);
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
}  // namespace

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

namespace {
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
}  // namespace

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

namespace {
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

// -- unwind tables (ABI 1.19): mostly valid tables and ranges, sometimes
// hostile ones the module must refuse; valid-looking but lying rules (a CFA
// that loops, return addresses anywhere) are accepted and walked: the walk
// must stay bounded and fault-safe.
void FillUnwindLoad(Rng& r, Worker&, void* a, Call& c) {
  auto* in = static_cast<tprof_unwind_load*>(a);
  *in = {};
  u64 n = 1 + r.Below(64);
  in->rows = EmbeddedPtr(r, c, sizeof(tprof_unwind_row), n);
  in->nr_rows = uint32_t(n);
  if (c.embedded == PtrKind::kValid) {
    auto* rows = reinterpret_cast<tprof_unwind_row*>(t_scratch->array);
    u64 start = r.Below(4096);
    for (u64 i = 0; i < n; i++) {
      tprof_unwind_row& row = rows[i];
      row = {};
      row.start = uint32_t(start);
      start += 1 + r.Below(64);
      row.cfa_base = uint8_t(r.Below(TPROF_UNWIND_CFA_MAX + 1));
      row.cfa_offset = int32_t(r.OneIn(4) ? int64_t(r.Edgy()) : int64_t(r.Below(64)) * 8 - 64);
      row.fp_rule = uint8_t(r.Below(TPROF_UNWIND_FP_MAX + 1));
      row.fp_offset = int16_t(int(r.Below(32)) * 8 - 128);
      row.ra_rule = uint8_t(r.Below(TPROF_UNWIND_RA_MAX + 1));
      row.ra_offset = int16_t(int(r.Below(32)) * 8 - 128);
    }
    if (r.OneIn(6)) {
      const u64 k = r.Below(n);
      switch (r.Below(3)) {
        case 0: rows[k].cfa_base = TPROF_UNWIND_CFA_MAX + 1; c.defect = "a CFA rule out of range"; break;
        case 1: rows[k].reserved = 1; c.defect = "a row's nonzero reserved byte"; break;
        default:
          if (n < 2) return;
          rows[k ? k : 1].start = rows[(k ? k : 1) - 1].start;
          c.defect = "rows not increasing";
          break;
      }
      c.must_fail = true;
    }
  } else if (!Readable(c.embedded)) {
    c.must_fail = true;
    c.defect = "unreadable rows";
  }
  if (r.OneIn(10)) {
    in->nr_rows = r.OneIn(2) ? 0 : TPROF_UNWIND_MAX_ROWS + 1;
    c.must_fail = true;
    c.defect = "nr_rows";
  }
  MaybeDefectReserved(r, c, in->resv, sizeof(in->resv), "resv");
}

void FillUnwindSpace(Rng& r, Worker&, void* a, Call& c) {
  auto* in = static_cast<tprof_unwind_space*>(a);
  *in = {};
  in->space_id = r.OneIn(4) ? r.Edgy() : RecentSpace(r);
  u64 n = r.OneIn(8) ? 0 : 1 + r.Below(16);
  if (n) in->ranges = EmbeddedPtr(r, c, sizeof(tprof_unwind_range), n);
  in->nr_ranges = uint32_t(n);
  if (n && c.embedded == PtrKind::kValid) {
    auto* ranges = reinterpret_cast<tprof_unwind_range*>(t_scratch->array);
    // Over the fuzzer's own code and stack, or anywhere.
    u64 at = r.OneIn(2) ? u64(uintptr_t(&tprof_fuzz_spin)) & ~u64(0xffff) : r.Edgy() & ~u64(0xfff);
    for (u64 i = 0; i < n; i++) {
      ranges[i] = {};
      ranges[i].start = at;
      ranges[i].end = at + 1 + r.Below(1 << 20);
      at = ranges[i].end + r.Below(4096);
      ranges[i].bias = r.OneIn(3) ? r.Edgy() : ranges[i].start - r.Below(4096);
      ranges[i].table_id = uint32_t(1 + r.Below(8));  // may not exist: EINVAL
      if (ranges[i].end <= ranges[i].start) {  // wrapped past the top
        n = i;
        in->nr_ranges = uint32_t(n);
        break;
      }
    }
    if (n >= 2 && r.OneIn(6)) {
      ranges[1].start = ranges[0].end - 1;
      c.must_fail = true;
      c.defect = "overlapping ranges";
    } else if (n && r.OneIn(8)) {
      ranges[0].resv = 1;
      c.must_fail = true;
      c.defect = "a range's nonzero resv";
    }
  } else if (n && !Readable(c.embedded)) {
    c.must_fail = true;
    c.defect = "unreadable ranges";
  }
  if (r.OneIn(12)) {
    in->nr_ranges = TPROF_UNWIND_MAX_RANGES + 1;
    c.must_fail = true;
    c.defect = "nr_ranges";
  }
  if (r.OneIn(8)) {
    in->resv2 = 1;
    c.must_fail = true;
    c.defect = "nonzero resv2";
  }
}

void CheckUnwindLoad(Worker&, const void*, const void* o, const Call&) {
  const auto* out = static_cast<const tprof_unwind_load*>(o);
  if (out->table_id == 0 || out->table_id > (1u << 31))
    VIOLATION("UNWIND_LOAD: table_id %u", out->table_id);
}

}  // namespace

// A session with TPROF_SAMPLING_USER_CFI fed by its owner: tables (hostile
// rules the module accepts among them) over spaces its samples named, so
// that the handler walks with them.
void FeedUnwindTables(Worker& w, int fd) {
  Call c;
  tprof_unwind_load l;
  FillUnwindLoad(w.rng, w, &l, c);
  int err = RawIoctl("UNWIND_LOAD", fd, TPROF_IOC_UNWIND_LOAD, &l);
  if (c.must_fail && !err) VIOLATION("owner's UNWIND_LOAD accepted %s", c.defect.c_str());
  // Rows at a readable hostile pointer (the read-only zero page) are
  // whatever is there: only the scratch array's are known to be valid.
  if (!c.must_fail && c.embedded == PtrKind::kValid && err && err != EDQUOT && err != ENOMEM)
    VIOLATION("owner's UNWIND_LOAD of a valid table: %s", ErrName(err).c_str());
  Count("owner unwind load " + ErrName(err));
  Call c2;
  tprof_unwind_space sp;
  FillUnwindSpace(w.rng, w, &sp, c2);
  err = RawIoctl("UNWIND_SPACE", fd, TPROF_IOC_UNWIND_SPACE, &sp);
  if (c2.must_fail && !err) VIOLATION("owner's UNWIND_SPACE accepted %s", c2.defect.c_str());
  Count("owner unwind space " + ErrName(err));
}

namespace {
// The table. Errnos: Documented(), plus EFAULT and EINVAL for every ioctl.
const std::vector<IoctlSpec> kIoctls = {
    {"GET_INFO", TPROF_IOC_GET_INFO, false, FillInfo, CheckInfo},
    {"METRICS_ENABLE", TPROF_IOC_METRICS_ENABLE, true, FillMetricsEnable, CheckNothing},
    {"METRICS_DISABLE", TPROF_IOC_METRICS_DISABLE, true, FillNone, CheckNothing},
    {"METRICS_STATUS", TPROF_IOC_METRICS_STATUS, false, FillZero, CheckMetricsStatus},
    {"THREAD_READ", TPROF_IOC_THREAD_READ, false, FillThreadRead, CheckThreadRead},
    {"DRAIN", TPROF_IOC_DRAIN, false, FillDrain, CheckDrain},
    {"READ_SELF", TPROF_IOC_READ_SELF, false, FillZero, CheckReadSelf},
    {"SAMPLING_START", TPROF_IOC_SAMPLING_START, false, FillSamplingStart, CheckSamplingStart},
    {"SAMPLING_STOP", TPROF_IOC_SAMPLING_STOP, false, FillNone, CheckNothing},
    {"SAMPLING_RELEASE", TPROF_IOC_SAMPLING_RELEASE, false, FillRelease, CheckNothing},
    {"SAMPLING_STATUS", TPROF_IOC_SAMPLING_STATUS, false, FillZero, CheckSamplingStatus},
    {"WINDOW_ADD", TPROF_IOC_WINDOW_ADD, false, FillWindowAdd, CheckWindowAdd},
    {"WINDOW_READ", TPROF_IOC_WINDOW_READ, false, FillWindowRead, CheckWindowRead},
    {"WINDOW_LIST", TPROF_IOC_WINDOW_LIST, false, FillWindowList, CheckWindowList},
    {"SAMPLING_STOP_ANY", TPROF_IOC_SAMPLING_STOP_ANY, true, FillNone, CheckNothing},
    {"SAMPLING_FLUSH", TPROF_IOC_SAMPLING_FLUSH, false, FillNone, CheckNothing},
    {"UNWIND_LOAD", TPROF_IOC_UNWIND_LOAD, false, FillUnwindLoad, CheckUnwindLoad},
    {"UNWIND_SPACE", TPROF_IOC_UNWIND_SPACE, false, FillUnwindSpace, CheckNothing},
    {"SAMPLING_AGGREGATE_READ", TPROF_IOC_SAMPLING_AGGREGATE_READ, false, FillAggregateRead,
     CheckAggregateRead},
    {"PMU_CREATE", TPROF_IOC_PMU_CREATE, false, FillPmuCreate, CheckPmuCreate},
};

// Whether err is one of cmd's rows in the ABI's error table (EFAULT and
// EINVAL, which any ioctl may return, are the caller's to allow). EBUSY from
// PMU_CREATE is arm64's alone.
bool Documented(unsigned long cmd, int err) {
  if (cmd == TPROF_IOC_PMU_CREATE && err == EBUSY && err != kBreakpointBusy) return false;
#define TPROF_ROW(name, e, meaning) \
  if (cmd == TPROF_IOC_##name && err == (e)) return true;
  TPROF_IOCTL_ERRORS(TPROF_ROW)
#undef TPROF_ROW
  return false;
}

bool KnownNr(unsigned nr) {
  for (const auto& s : kIoctls)
    if (_IOC_NR(s.cmd) == nr) return true;
  return false;
}
}  // namespace

// ioctl(2) returning 0 or an errno; a positive return is reported.
int RawIoctl(const char* name, int fd, unsigned long cmd, void* arg) {
  errno = 0;
  long r = ::ioctl(fd, cmd, arg);
  if (r > 0) VIOLATION("%s returned %ld (ioctls return 0 or -1)", name, r);
  return r == 0 ? 0 : errno;
}

namespace {
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
}  // namespace

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
    bool documented = err == EFAULT || err == EINVAL || Documented(s.cmd, err);
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

}  // namespace tprof_fuzz::core
