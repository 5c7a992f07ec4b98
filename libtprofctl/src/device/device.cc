#include "tprof/device/device.h"

#include "device/ioctl_errors.h"

#include <fcntl.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

namespace tprof {

namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

Error OpenError(const std::string& path, int err) {
  switch (err) {
    case ENOENT:
    case ENODEV:
    case ENXIO:
      return Error::FromErrno(err, path + " not found: " + ErrnoText(err) +
                                       " (the tprof module is not loaded)");
    case EACCES:
    case EPERM:
      return Error::FromErrno(err, "cannot open " + path + ": " + ErrnoText(err) +
                                       " (the module creates it with mode 0666)");
    default:
      return Error::FromErrno(err, "cannot open " + path + ": " + ErrnoText(err));
  }
}

}  // namespace

std::string Info::ModuleVersionString() const {
  return std::to_string(TPROF_VERSION_MAJOR(module_version)) + "." +
         std::to_string(TPROF_VERSION_MINOR(module_version)) + "." +
         std::to_string(TPROF_VERSION_PATCH(module_version));
}

std::string Info::AbiVersionString() const {
  return std::to_string(abi_major) + "." + std::to_string(abi_minor);
}

std::string Info::StateName() const {
  switch (state) {
    case TPROF_STATE_IDLE:
      return "idle";
    case TPROF_STATE_SAMPLING:
      return "sampling";
    default:
      return "unknown(" + std::to_string(state) + ")";
  }
}

uint64_t FeaturesOf(const tprof_info& raw) {
  // What each minor before 1.17 added, in the bit it has since.
  static constexpr struct {
    uint32_t minor;
    uint64_t feature;
  } kImplied[] = {
      {9, TPROF_FEAT_PMU_SUBSCRIBE_REPLY}, {10, TPROF_FEAT_PMU_WIDE_WATCHPOINTS},
      {11, TPROF_FEAT_PMU_DATA_RANGES},    {12, TPROF_FEAT_EXEC_TRANSITION},
      {13, TPROF_FEAT_INDEX_REHASHES},     {14, TPROF_FEAT_PMU_COUNTS_ONLY},
      {15, TPROF_FEAT_PMU_COUNTS_ONLY_CPUS}, {16, TPROF_FEAT_SAMPLING_CPUS},
  };
  uint64_t features = raw.features;
  if (raw.abi_major == TPROF_ABI_MAJOR && raw.abi_minor < 17)
    for (const auto& f : kImplied)
      if (raw.abi_minor >= f.minor) features |= f.feature;
  return features;
}

std::vector<std::string> Info::FeatureNames() const {
  static constexpr struct {
    uint64_t feature;
    const char* name;
  } kNames[] = {
      {TPROF_FEAT_SCHED_COUNTERS, "sched_counters"},
      {TPROF_FEAT_THREAD_METRICS, "thread_metrics"},
      {TPROF_FEAT_SAMPLING, "sampling"},
      {TPROF_FEAT_WINDOWS, "windows"},
      {TPROF_FEAT_SELF_PAGE, "self_page"},
      {TPROF_FEAT_PMU_PROGRAMS, "pmu_programs"},
      {TPROF_FEAT_THREAD_TOTALS, "thread_totals"},
      {TPROF_FEAT_PMU_SUBSCRIBE_REPLY, "pmu_subscribe_reply"},
      {TPROF_FEAT_PMU_WIDE_WATCHPOINTS, "pmu_wide_watchpoints"},
      {TPROF_FEAT_PMU_DATA_RANGES, "pmu_data_ranges"},
      {TPROF_FEAT_EXEC_TRANSITION, "exec_transition"},
      {TPROF_FEAT_INDEX_REHASHES, "index_rehashes"},
      {TPROF_FEAT_PMU_COUNTS_ONLY, "pmu_counts_only"},
      {TPROF_FEAT_PMU_COUNTS_ONLY_CPUS, "pmu_counts_only_cpus"},
      {TPROF_FEAT_SAMPLING_CPUS, "sampling_cpus"},
      {TPROF_FEAT_SAMPLING_USER_STACK, "sampling_user_stack"},
      {TPROF_FEAT_UNWIND_TABLES, "unwind_tables"},
      {TPROF_FEAT_UNWIND_SIGNAL_FRAMES, "unwind_signal_frames"},
  };
  std::vector<std::string> names;
  for (const auto& f : kNames)
    if (features & f.feature) names.push_back(f.name);
  return names;
}

Expected<Device> Device::Open(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) return OpenError(path, errno);
  return Device(std::move(fd));
}

Expected<Info> Device::GetInfo() const {
  // First call learns nr_cpu_ids, the second fetches every CPU. CPUs are
  // never added to cpu_possible_mask at run time, so two calls suffice.
  tprof_info raw{};
  if (::ioctl(fd_.get(), TPROF_IOC_GET_INFO, &raw) != 0)
    return IoctlFailure("TPROF_IOC_GET_INFO", TPROF_IOC_GET_INFO, errno);
  if (raw.abi_major != TPROF_ABI_MAJOR)
    return Error::FromErrno(
        EPROTO, "tprof module speaks ABI " + std::to_string(raw.abi_major) + "." +
                    std::to_string(raw.abi_minor) + ", this tool ABI " +
                    std::to_string(TPROF_ABI_MAJOR) + "." + std::to_string(TPROF_ABI_MINOR) +
                    ": load the module built from the same tree as the tool");

  std::vector<tprof_cpu_stats> stats(raw.nr_cpu_ids);
  raw = tprof_info{};
  raw.cpu_stats = reinterpret_cast<uintptr_t>(stats.data());
  raw.cpu_stats_count = static_cast<uint32_t>(stats.size());
  if (::ioctl(fd_.get(), TPROF_IOC_GET_INFO, &raw) != 0)
    return IoctlFailure("TPROF_IOC_GET_INFO", TPROF_IOC_GET_INFO, errno);

  Info info;
  info.abi_major = raw.abi_major;
  info.abi_minor = raw.abi_minor;
  info.module_version = raw.module_version;
  info.state = raw.state;
  info.nr_cpu_ids = raw.nr_cpu_ids;
  info.nr_online_cpus = raw.nr_online_cpus;
  info.features = FeaturesOf(raw);
  info.total = raw.total;
  for (uint32_t i = 0; i < raw.cpu_stats_count && i < stats.size(); ++i)
    info.cpus.push_back(CpuStats{stats[i].cpu, stats[i].online != 0, stats[i].counters});
  return info;
}

Status Device::EnableMetrics(const std::vector<MetricSpec>& metrics) const {
  if (metrics.empty() || metrics.size() > TPROF_MAX_METRICS)
    return Error::FromErrno(EINVAL, "between 1 and " + std::to_string(TPROF_MAX_METRICS) +
                                        " metrics can be enabled");
  tprof_metrics_config config{};
  config.nr_metrics = static_cast<uint32_t>(metrics.size());
  for (size_t i = 0; i < metrics.size(); ++i) {
    config.metrics[i].type = metrics[i].type;
    config.metrics[i].config = metrics[i].config;
  }
  if (::ioctl(fd_.get(), TPROF_IOC_METRICS_ENABLE, &config) != 0)
    return IoctlFailure("enabling per-thread metrics", TPROF_IOC_METRICS_ENABLE, errno);
  return OkStatus();
}

Status Device::DisableMetrics() const {
  if (::ioctl(fd_.get(), TPROF_IOC_METRICS_DISABLE) != 0)
    return IoctlFailure("disabling per-thread metrics", TPROF_IOC_METRICS_DISABLE, errno);
  return OkStatus();
}

Status Device::StopAnySampling() const {
  if (::ioctl(fd_.get(), TPROF_IOC_SAMPLING_STOP_ANY) != 0)
    return IoctlFailure("stopping the sampling session", TPROF_IOC_SAMPLING_STOP_ANY, errno);
  return OkStatus();
}

Expected<MetricsStatus> Device::GetMetricsStatus() const {
  tprof_metrics_status raw{};
  if (::ioctl(fd_.get(), TPROF_IOC_METRICS_STATUS, &raw) != 0)
    return IoctlFailure("TPROF_IOC_METRICS_STATUS", TPROF_IOC_METRICS_STATUS, errno);
  MetricsStatus st;
  st.enabled = raw.enabled != 0;
  for (uint32_t i = 0; i < raw.nr_metrics && i < TPROF_MAX_METRICS; ++i)
    st.metrics.push_back(MetricSpec{raw.metrics[i].type, raw.metrics[i].config});
  st.table_capacity = raw.table_capacity;
  st.table_used = raw.table_used;
  st.untracked_threads = raw.untracked_threads;
  st.reclaimed_threads = raw.reclaimed_threads;
  st.index_rehashes = raw.index_rehashes;
  st.uncounted_switches = raw.uncounted_switches;
  st.listed = raw.listed;
  return st;
}

namespace {

// TPROF_IOC_THREAD_READ with flags (0: read-and-zero).
Expected<ThreadMetrics> ThreadRead(int fd, uint32_t tid, uint32_t flags, const char* what) {
  tprof_thread_read req{};
  req.tid = tid;
  req.flags = flags;
  if (::ioctl(fd, TPROF_IOC_THREAD_READ, &req) != 0)
    return IoctlFailure(what + std::to_string(tid), TPROF_IOC_THREAD_READ, errno);
  return ThreadMetricsFromRecord(req.thread);
}

}  // namespace

Expected<ThreadMetrics> Device::ReadThread(uint32_t tid) const {
  return ThreadRead(fd_.get(), tid, 0, "reading thread ");
}

Expected<ThreadMetrics> Device::ReadThreadTotals(uint32_t tid) const {
  return ThreadRead(fd_.get(), tid, TPROF_THREAD_READ_TOTALS, "reading the totals of thread ");
}

Expected<SamplingStatus> Device::GetSamplingStatus() const {
  tprof_sampling_status st{};
  if (::ioctl(fd_.get(), TPROF_IOC_SAMPLING_STATUS, &st) != 0)
    return IoctlFailure("TPROF_IOC_SAMPLING_STATUS", TPROF_IOC_SAMPLING_STATUS, errno);
  SamplingStatus out;
  out.active = st.active != 0;
  out.running = st.running != 0;
  out.pid = st.pid;
  out.frequency_hz = st.frequency_hz;
  out.event_type = st.event_type;
  out.samples_taken = st.samples_taken;
  out.lost_samples = st.lost_samples;
  out.lost_records = st.lost_records;
  return out;
}

Expected<uint64_t> Device::ReadSelf(uint64_t (&values)[TPROF_MAX_METRICS]) const {
  tprof_self_read out{};
  if (::ioctl(fd_.get(), TPROF_IOC_READ_SELF, &out) != 0)
    return IoctlFailure("reading this thread's metrics", TPROF_IOC_READ_SELF, errno);
  for (size_t i = 0; i < TPROF_MAX_METRICS; ++i) values[i] = out.values[i];
  return static_cast<uint64_t>(out.identity);
}

Expected<DrainResult> Device::Drain(uint32_t pid, uint32_t capacity) const {
  std::vector<tprof_thread_metrics> records(capacity);
  tprof_drain req{};
  req.records = reinterpret_cast<uintptr_t>(records.data());
  req.capacity = capacity;
  req.pid = pid;
  if (::ioctl(fd_.get(), TPROF_IOC_DRAIN, &req) != 0) return IoctlFailure("TPROF_IOC_DRAIN", TPROF_IOC_DRAIN, errno);
  DrainResult result;
  result.remaining = req.remaining;
  result.untracked_threads = req.untracked_threads;
  result.threads.reserve(req.count);
  for (uint32_t i = 0; i < req.count && i < capacity; ++i)
    result.threads.push_back(ThreadMetricsFromRecord(records[i]));
  return result;
}

Expected<DrainResult> Device::DrainAll(uint32_t pid) const {
  DrainResult all;
  std::unordered_map<uint64_t, size_t> by_identity;  // one entry per thread
  // Each call returns every listed thread at most once; a few rounds catch
  // what arrives meanwhile without looping forever on a busy machine.
  for (int round = 0; round < 16; ++round) {
    auto part = Drain(pid, 4096);
    if (!part) return part.error();
    all.untracked_threads = part->untracked_threads;
    all.remaining = part->remaining;
    for (ThreadMetrics& t : part->threads) {
      auto [it, inserted] = by_identity.emplace(t.identity, all.threads.size());
      if (inserted) {
        all.threads.push_back(std::move(t));
        continue;
      }
      ThreadMetrics& seen = all.threads[it->second];
      for (size_t i = 0; i < seen.values.size() && i < t.values.size(); ++i)
        seen.values[i] += t.values[i];
      seen.exited |= t.exited;
    }
    if (part->remaining == 0) break;
  }
  return all;
}

}  // namespace tprof
