// The calling thread's metrics without a system call, from its self page
// (ABI 1.4, TPROF_SELF_PAGE_OFFSET): the kernel adds every delta it charges
// to the thread there and stamps the TSC when the thread gets the CPU, so
// the thread adds its current slice itself. For runtimes that read their own
// CPU time on every method entry and exit.
//
// One SelfMeter per thread, opened and used by that thread only (a
// thread_local is the natural home). It is a private view: reading it does
// not zero what THREAD_READ, READ_SELF and DRAIN return.
#ifndef TPROF_SELF_METER_H_
#define TPROF_SELF_METER_H_

#include <linux/tprof.h>

#include <cstdint>

#include "tprof/device/device.h"
#include "tprof/base/expected.h"
#include "tprof/device/scoped_mapping.h"

namespace tprof {

class SelfMeter {
 public:
  // Maps the calling thread's page. ENODATA: accounting is off. ESRCH: this
  // thread is not tracked (table full). EOPNOTSUPP: the module is older than
  // ABI 1.4, or time is configured but there is no usable TSC (then use
  // Device::ReadSelf).
  static Expected<SelfMeter> Open(const Device& device);

  SelfMeter(SelfMeter&&) noexcept = default;
  SelfMeter& operator=(SelfMeter&&) noexcept = default;
  ~SelfMeter();

  // Everything charged to this thread since its page was first mapped, in
  // the configured metric order. The time metric includes the current slice;
  // the others are exact up to the thread's last switch-in. ENODATA once
  // accounting stopped or restarted, ECHILD in a forked child: open a new
  // meter then.
  Status ReadTotals(uint64_t (&totals)[TPROF_MAX_METRICS]) const;

  // Read-and-zero for this meter: what was added since the previous Read
  // (or since Open). Never negative (the time of the current slice is
  // estimated from the TSC; a later read catches up if it ran ahead).
  Status Read(uint64_t (&delta)[TPROF_MAX_METRICS]);

  uint32_t nr_metrics() const { return nr_metrics_; }
  uint64_t identity() const { return identity_; }
  uint32_t tid() const { return tid_; }
  // Index of the time metric in the values, or -1 if time is not measured.
  int time_index() const { return time_index_; }

 private:
  explicit SelfMeter(ScopedMapping map);
  const tprof_self_page* page() const {
    return reinterpret_cast<const tprof_self_page*>(map_.data());
  }

  ScopedMapping map_;
  uint64_t fork_generation_ = 0;
  uint64_t identity_ = 0;
  uint32_t tid_ = 0;
  uint32_t nr_metrics_ = 0;
  int time_index_ = -1;
  uint64_t last_[TPROF_MAX_METRICS] = {};
};

}  // namespace tprof

#endif  // TPROF_SELF_METER_H_
