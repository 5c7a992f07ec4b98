// The control device /dev/tprof: open it, ask it what it is and what it has
// counted. A thin layer over the ioctls of uapi/linux/tprof.h.
#ifndef TPROF_DEVICE_H_
#define TPROF_DEVICE_H_

#include <linux/tprof.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tprof/base/expected.h"
#include "tprof/device/metrics.h"
#include "tprof/base/scoped_fd.h"

namespace tprof {

struct CpuStats {
  uint32_t cpu = 0;
  bool online = false;
  tprof_counters counters{};
};

// A module's TPROF_FEAT_* bits, with those a module of ABI 1.9 to 1.16
// had by its minor version (it sets no bit for them): the one way the
// library and the CLI ask what a module can do.
[[nodiscard]] uint64_t FeaturesOf(const tprof_info& raw);

// What TPROF_IOC_GET_INFO reports, in library types.
struct Info {
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  uint32_t module_version = 0;  // packed, see ModuleVersionString()
  uint32_t state = 0;           // enum tprof_state
  uint32_t nr_cpu_ids = 0;
  uint32_t nr_online_cpus = 0;
  uint64_t features = 0;  // FeaturesOf(): implied bits included
  tprof_counters total{};
  std::vector<CpuStats> cpus;  // one entry per possible CPU id

  std::string ModuleVersionString() const;  // "0.1.0"
  std::string AbiVersionString() const;     // "1.0"
  std::string StateName() const;            // "idle"
  std::vector<std::string> FeatureNames() const;
  bool Has(uint64_t feature) const { return (features & feature) == feature; }
};

// What TPROF_IOC_SAMPLING_STATUS reports: the running session, whoever
// owns it.
struct SamplingStatus {
  bool active = false;   // a session exists (running or stopped)
  bool running = false;  // samples are being taken
  uint32_t pid = 0;      // TPROF_PID_ALL: every process
  uint32_t frequency_hz = 0;
  uint32_t event_type = 0;  // TPROF_SAMPLE_ON_CLOCK or a TPROF_METRIC_* type
  uint64_t samples_taken = 0;
  uint64_t lost_samples = 0;
  uint64_t lost_records = 0;
};

class Device {
 public:
  // Opens the device (O_RDWR | O_CLOEXEC). The error message says how to
  // load the module when the device node is missing.
  static Expected<Device> Open(const std::string& path = TPROF_DEVICE_PATH);

  // GET_INFO, with every CPU's counters. Fails with EPROTO if the module
  // speaks another ABI major version than this library.
  Expected<Info> GetInfo() const;

  // Per-thread metrics. Enable/Disable need CAP_PERFMON or CAP_SYS_ADMIN.
  // Enabling while enabled restarts accounting with the new metric set.
  Status EnableMetrics(const std::vector<MetricSpec>& metrics) const;
  Status DisableMetrics() const;
  // Stops whoever's sampling session runs (CAP_PERFMON or CAP_SYS_ADMIN;
  // ABI 1.5): its owner still drains it, and a new session may start.
  Status StopAnySampling() const;
  Expected<MetricsStatus> GetMetricsStatus() const;
  // The sampling session's settings and totals (anyone may ask).
  Expected<SamplingStatus> GetSamplingStatus() const;

  // Read-and-zero of one thread's accumulated metrics; tid 0 is the calling
  // thread (and then includes its current time slice).
  Expected<ThreadMetrics> ReadThread(uint32_t tid = 0) const;
  // Everything charged to thread tid since accounting started or the
  // thread appeared, taking nothing from the read-and-zero consumers
  // (TPROF_THREAD_READ_TOTALS, ABI 1.8): live views difference two reads.
  Expected<ThreadMetrics> ReadThreadTotals(uint32_t tid) const;
  // The calling thread's read-and-zero through the lean READ_SELF ioctl:
  // identity and values only (fills `values`, returns the identity).
  Expected<uint64_t> ReadSelf(uint64_t (&values)[TPROF_MAX_METRICS]) const;

  // One drain call: at most `capacity` threads of process `pid` (0: the
  // caller's, TPROF_PID_ALL: every process) whose accumulators are nonzero,
  // each zeroed as it is returned. `remaining` says how many are left.
  Expected<DrainResult> Drain(uint32_t pid = 0, uint32_t capacity = 1024) const;
  // Drains until nothing is left (bounded number of calls).
  Expected<DrainResult> DrainAll(uint32_t pid = 0) const;

  int fd() const { return fd_.get(); }

 private:
  explicit Device(ScopedFd fd) : fd_(std::move(fd)) {}
  ScopedFd fd_;
};

}  // namespace tprof

#endif  // TPROF_DEVICE_H_
