#include "tprof/device/sampling.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>

#include "tprof/device/device.h"
#include "tprof/base/event_names.h"
#include "device/ioctl_errors.h"

namespace tprof {

namespace {

// kernel.perf_event_paranoid, -1000 when unreadable.
int Paranoid() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  int level = -1000;
  return in >> level ? level : -1000;
}

// The table's meaning of err (ioctl_errors.h), with what only the caller's
// machine can add: the paranoid level behind an EACCES, and which ABI
// brought sampling.
Error SamplingError(const char* what, unsigned long cmd, int err) {
  // The module checks the paranoid level first (as perf): above 2 it
  // refuses even the caller's own child, which is not another user's.
  if (const int level = err == EACCES ? Paranoid() : 0; level > 2)
    return Error::FromErrno(err, std::string(what) + ": permission denied: kernel.perf_event_paranoid is " +
                                     std::to_string(level) +
                                     ", which lets no one sample without CAP_PERFMON or "
                                     "CAP_SYS_ADMIN (2 allows your own processes)");
  if (err == ENOTTY)
    return Error::FromErrno(err, std::string(what) + ": the loaded tprof module is too old for sampling (ENOTTY)");
  return IoctlFailure(what, cmd, err);
}

}  // namespace

Status ParseSampleEvent(const std::string& name, SamplingOptions* options) {
  if (const EventName* e = FindEventName(name, kUseSample); e && name == e->name) {
    // cpu-clock is the clock sampling the module does by default.
    bool clock = e->type == TPROF_METRIC_SOFTWARE && e->config == PERF_COUNT_SW_CPU_CLOCK;
    options->event_type = clock ? TPROF_SAMPLE_ON_CLOCK : e->type;
    options->event_config = clock ? 0 : e->config;
    return OkStatus();
  }
  if (auto code = ParseRawEventName(name, false)) {
    options->event_type = TPROF_METRIC_RAW;
    options->event_config = *code;
    return OkStatus();
  }
  std::string known;
  for (const EventName& e : EventNames())
    if (e.uses & kUseSample) known += std::string(e.name) + ", ";
  return Error::FromErrno(EINVAL, "unknown event '" + name + "': use " + known + "or rHEX");
}


namespace {

// ENOTSUP unless the module at fd has `feature`: "<what> a module of ABI
// 1.<minor> or later (this one is 1.N)".
Status RequireFeature(int fd, uint64_t feature, const char* what, unsigned minor) {
  tprof_info info{};
  if (::ioctl(fd, TPROF_IOC_GET_INFO, &info) != 0)
    return SamplingError("starting sampling", TPROF_IOC_GET_INFO, errno);
  if (!(FeaturesOf(info) & feature))
    return Error::FromErrno(ENOTSUP, std::string(what) + " a module of ABI 1." +
                                         std::to_string(minor) + " or later (this one is 1." +
                                         std::to_string(info.abi_minor) + ")");
  return OkStatus();
}

}  // namespace

Expected<SamplingSession> SamplingSession::Start(const SamplingOptions& o,
                                                 const std::string& device_path) {
  ScopedFd fd(::open(device_path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) {
    int err = errno;
    if (err == ENOENT || err == ENODEV || err == ENXIO)
      return Error::FromErrno(err, device_path + " not found: " + std::strerror(err) +
                                       " (the tprof module is not loaded)");
    return Error::FromErrno(err, "cannot open " + device_path + ": " + std::strerror(err));
  }
  tprof_sampling_config c{};
  c.flags = o.callers ? TPROF_SAMPLING_CALLERS : 0;
  if (o.stack_depth) {
    c.flags |= TPROF_SAMPLING_STACKS;
    c.stack_depth = o.stack_depth;
  }
  if (o.user_stack_bytes) {
    if (Status st = RequireFeature(fd.get(), TPROF_FEAT_SAMPLING_USER_STACK,
                                   "user stack copies need", 18);
        !st)
      return st.error();
    c.flags |= TPROF_SAMPLING_USER_STACK;
    c.user_stack_bytes = o.user_stack_bytes;
  }
  if (o.unwind_tables) {
    if (Status st = RequireFeature(fd.get(), TPROF_FEAT_UNWIND_TABLES,
                                   "unwinding with CFI in the module needs", 19);
        !st)
      return st.error();
    c.flags |= TPROF_SAMPLING_USER_CFI;
  }
  if (o.event_type == TPROF_SAMPLE_ON_TICK) {
    if (Status st = RequireFeature(fd.get(), TPROF_FEAT_SAMPLING_TICK,
                                   "sampling in the scheduler tick needs", 21);
        !st)
      return st.error();
  }
  if (o.aggregate) {
    if (Status st = RequireFeature(fd.get(), TPROF_FEAT_SAMPLING_AGGREGATE,
                                   "counting samples in the module needs", 21);
        !st)
      return st.error();
    if (Status st = o.stack_depth ? RequireFeature(fd.get(), TPROF_FEAT_SAMPLING_AGGREGATE_STACKS,
                                                   "counting stacks in the module needs", 22)
                                  : OkStatus();
        !st)
      return st.error();
    c.flags |= TPROF_SAMPLING_AGGREGATE | (o.aggregate_records ? TPROF_SAMPLING_AGGREGATE_RECORDS : 0);
    c.aggregate_slots = o.aggregate_slots;
  }
  const bool counter = o.event_type != TPROF_SAMPLE_ON_CLOCK && o.event_type != TPROF_SAMPLE_ON_TICK;
  c.pid = o.pid;
  c.frequency_hz = o.event_type == TPROF_SAMPLE_ON_CLOCK ? o.frequency_hz : 0;
  c.half_bytes = o.half_bytes;
  c.event_type = o.event_type;
  c.event_config = counter ? o.event_config : 0;
  c.event_period = counter ? o.event_period : 0;
  std::vector<uint64_t> cpu_words;  // the uapi's bitmap: bit n%64 of word n/64
  if (!o.cpus.empty()) {
    if (Status st = RequireFeature(fd.get(), TPROF_FEAT_SAMPLING_CPUS,
                                   "sampling chosen CPUs needs", 16);
        !st)
      return st.error();
    for (uint32_t cpu : o.cpus) {
      if (cpu / 64 >= cpu_words.size()) cpu_words.resize(cpu / 64 + 1);
      cpu_words[cpu / 64] |= uint64_t{1} << (cpu % 64);
    }
    c.cpus = reinterpret_cast<uintptr_t>(cpu_words.data());
    c.cpus_bytes = static_cast<uint32_t>(cpu_words.size() * sizeof(uint64_t));
  }
  if (::ioctl(fd.get(), TPROF_IOC_SAMPLING_START, &c) != 0) {
    if (errno == EOPNOTSUPP && o.event_type == TPROF_SAMPLE_ON_TICK) {
      // clock_getres() gives what the module checks: 1 ns with high-resolution timers.
      timespec res{};
      const bool low_res = ::clock_getres(CLOCK_MONOTONIC, &res) == 0 && (res.tv_sec || res.tv_nsec > 1);
      return Error::FromErrno(EOPNOTSUPP, low_res ? "starting sampling: timers are not high resolution "
                                                    "(highres=off), so the scheduler tick is no hrtimer "
                                                    "the module can hook (EOPNOTSUPP)"
                                                  : "starting sampling: the module cannot hook this kernel's "
                                                    "scheduler tick (EOPNOTSUPP)");
    }
    return SamplingError("starting sampling", TPROF_IOC_SAMPLING_START, errno);
  }
  // MAP_POPULATE: the page faults of the reader's first pass over each
  // half (32 a CPU at the default size) happen now, not while the profiled
  // work runs. The kernel stops populating at the first page of a CPU
  // without halves (SIGBUS for a fault), which is not an error.
  void* addr = ::mmap(nullptr, c.map_bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, fd.get(), 0);
  if (addr == MAP_FAILED)
    return Error::FromErrno(errno, std::string("mapping the sample buffers: ") +
                                       std::strerror(errno));
  return SamplingSession(std::move(fd), ScopedMapping(addr, c.map_bytes), c);
}

const tprof_buffer_ctl& SamplingSession::Ctl(uint32_t cpu) const {
  return reinterpret_cast<const tprof_buffer_ctl*>(map_.data())[cpu];
}

const uint8_t* SamplingSession::Half(uint32_t cpu, uint32_t half) const {
  return map_.data() + config_.ctl_bytes +
         (static_cast<size_t>(cpu) * 2 + half) * config_.half_bytes_out;
}

// Perf's default per CPU with stacks: two halves of 256 KiB.
constexpr uint32_t kStackHalfBytes = 256 * 1024;

Expected<SamplingSession> SamplingSession::StartPreferringStacks(SamplingOptions options,
                                                                 bool* stacks_refused) {
  *stacks_refused = false;
  if (options.stack_depth && options.half_bytes == 0) {
    SamplingOptions big = options;
    big.half_bytes = kStackHalfBytes;
    auto session = Start(big);
    if (session || (session.error().code() != std::errc::operation_not_permitted &&
                    session.error().code() != std::errc::invalid_argument))
      return session;
  }
  auto session = Start(options);
  if (session || session.error().code() != std::errc::invalid_argument || !options.stack_depth)
    return session;
  options.stack_depth = 0;
  options.callers = true;
  auto fallback = Start(options);
  *stacks_refused = static_cast<bool>(fallback);
  return fallback;
}

Expected<size_t> SamplingSession::Consume(const RecordFn& fn) {
  size_t consumed = 0;
  for (uint32_t cpu = 0; cpu < config_.nr_cpu_ids; ++cpu) {
    const tprof_buffer_ctl& ctl = Ctl(cpu);
    // Both halves may be full: the older publication goes first.
    for (;;) {
      bool f0 = __atomic_load_n(&ctl.full[0], __ATOMIC_ACQUIRE);
      bool f1 = __atomic_load_n(&ctl.full[1], __ATOMIC_ACQUIRE);
      if (!f0 && !f1) break;
      uint32_t half = f0 && f1 ? (ctl.seq[0] < ctl.seq[1] ? 0 : 1) : (f0 ? 0 : 1);
      const uint8_t* p = Half(cpu, half);
      size_t used = std::min<size_t>(ctl.used[half], config_.half_bytes_out);
      size_t off = 0;
      while (off + sizeof(tprof_rec_header) <= used) {
        const auto* hdr = reinterpret_cast<const tprof_rec_header*>(p + off);
        if (hdr->size < sizeof(tprof_rec_header) || hdr->size % 8 != 0 ||
            hdr->size > used - off) {
          ++malformed_halves_;
          break;
        }
        if (!fn(cpu, hdr, used - off)) {
          ++malformed_halves_;
          break;
        }
        off += hdr->size;
      }
      tprof_buffer_release rel{};
      rel.cpu = cpu;
      rel.half = half;
      if (::ioctl(fd_.get(), TPROF_IOC_SAMPLING_RELEASE, &rel) != 0)
        return SamplingError("handing a sample buffer back", TPROF_IOC_SAMPLING_RELEASE, errno);
      ++consumed;
    }
  }
  return consumed;
}

Status SamplingSession::Stop() {
  if (stopped_) return OkStatus();
  if (::ioctl(fd_.get(), TPROF_IOC_SAMPLING_STOP) != 0)
    return SamplingError("stopping sampling", TPROF_IOC_SAMPLING_STOP, errno);
  stopped_ = true;
  return OkStatus();
}

Status SamplingSession::Flush() {
  if (stopped_) return OkStatus();
  if (::ioctl(fd_.get(), TPROF_IOC_SAMPLING_FLUSH) != 0)
    return SamplingError("publishing the partial buffers", TPROF_IOC_SAMPLING_FLUSH, errno);
  return OkStatus();
}

Expected<tprof_aggregate_read> SamplingSession::ReadAggregate(
    uint32_t cpu, std::vector<tprof_aggregate_entry>* entries) const {
  entries->resize(config_.aggregate_slots);
  tprof_aggregate_read rd{};
  rd.cpu = cpu;
  rd.max_entries = config_.aggregate_slots;
  rd.entries = reinterpret_cast<uintptr_t>(entries->data());
  if (::ioctl(fd_.get(), TPROF_IOC_SAMPLING_AGGREGATE_READ, &rd) != 0)
    return SamplingError("reading the module's sample counts", TPROF_IOC_SAMPLING_AGGREGATE_READ,
                         errno);
  entries->resize(std::min(rd.nr_entries, rd.max_entries));
  return rd;
}

bool SamplingSession::Finished() const {
  // POLLHUP comes only after a stop: Stop(), or an administrator's.
  pollfd p{fd_.get(), POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLHUP) && !(p.revents & POLLIN);
}

Status SamplingSession::Wait(int timeout_ms) const {
  pollfd p{fd_.get(), POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) < 0 && errno != EINTR)
    return Error::FromErrno(errno, std::string("waiting for samples: ") + std::strerror(errno));
  return OkStatus();
}

CpuBufferTotals SamplingSession::Totals(uint32_t cpu) const {
  const tprof_buffer_ctl& ctl = Ctl(cpu);
  CpuBufferTotals t;
  t.samples_taken = __atomic_load_n(&ctl.samples_taken, __ATOMIC_RELAXED);
  t.lost_samples = __atomic_load_n(&ctl.lost_samples, __ATOMIC_RELAXED);
  t.lost_records = __atomic_load_n(&ctl.lost_records, __ATOMIC_RELAXED);
  return t;
}

CpuBufferTotals SamplingSession::TotalsAll() const {
  CpuBufferTotals all;
  for (uint32_t cpu = 0; cpu < config_.nr_cpu_ids; ++cpu) {
    CpuBufferTotals t = Totals(cpu);
    all.samples_taken += t.samples_taken;
    all.lost_samples += t.lost_samples;
    all.lost_records += t.lost_records;
  }
  return all;
}

}  // namespace tprof
