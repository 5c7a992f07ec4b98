// top's display thread. Symbolizing and printing a refresh takes seconds
// under emulation or on a loaded machine, and the recorder's thread must
// keep draining the buffers meanwhile: a 64 KiB half holds about 1.2 s of
// one CPU's samples at 1 kHz, and when top showed refreshes on the
// recorder's thread, a slow one lost hundreds of samples. The recorder
// offers each interval here and goes back to draining; an offer made while
// the previous interval is still being shown is declined, and its samples
// wait for the next offer, which then covers a longer time.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "tprof/analysis/profile.h"

namespace tprof::cli {

struct TopInterval {
  Profile samples;     // what the interval added (SamplesSince)
  double seconds = 0;  // from the previous interval's end
};

class RefreshThread {
 public:
  // show() runs on the thread for each interval taken; it returns false
  // after the last refresh, and then last() runs (on the thread too).
  RefreshThread(std::function<bool(TopInterval&)> show, std::function<void()> last);
  ~RefreshThread();  // Stop()
  RefreshThread(const RefreshThread&) = delete;
  RefreshThread& operator=(const RefreshThread&) = delete;

  // If the thread is idle, takes make()'s interval (made under the lock,
  // so the caller's counts move only when it is taken) and returns true.
  bool Offer(const std::function<TopInterval()>& make);
  // No further refresh is shown; one being shown is finished. Joins.
  void Stop();
  // As Stop(), but an interval taken and not yet shown is shown first (a
  // continuous recording's file: its counts have moved on already).
  void StopAfterPending();

 private:
  void Loop();

  std::function<bool(TopInterval&)> show_;
  std::function<void()> last_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<TopInterval> pending_;
  bool busy_ = false;
  bool stopping_ = false;
  bool show_pending_ = false;  // StopAfterPending()
  std::thread thread_;
};

}  // namespace tprof::cli
