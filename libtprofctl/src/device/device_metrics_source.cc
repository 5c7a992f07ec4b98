// DeviceMetricsSource: RuntimeProfiler's view of /dev/tprof.
#include "tprof/device/runtime_profiler.h"

namespace tprof {

Expected<ThreadMetrics> DeviceMetricsSource::ReadThread(uint32_t tid) {
  return device_.ReadThread(tid);
}

// pid 0: the runtime profiles its own process only.
Expected<DrainResult> DeviceMetricsSource::Drain() { return device_.DrainAll(0); }

}  // namespace tprof
