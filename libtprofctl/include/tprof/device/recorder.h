// The recorder: a sampling session, a Boost.Asio event loop around it and
// the profile its records are reduced into in real time. The loop waits on
// the device (a half-buffer is full), on a timer behind it (250 ms, up to
// 8x longer while it finds nothing to read), on SIGINT/SIGTERM and, if
// given, on a child's exit.
// Finish() stops the session, drains it, and hands over the Profile with
// its CPU totals, attributes, counting windows (windows.h: add them with
// AddWindows() on session().fd() before Run()) and the system state
// (kernel symbols, JIT maps) copied in. Writing the file is the caller's
// (profile_file.h).
#ifndef TPROF_RECORDER_H_
#define TPROF_RECORDER_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "tprof/base/expected.h"
#include "tprof/analysis/profile.h"
#include "tprof/device/sampling.h"

namespace tprof {

// Blocks (or unblocks) SIGINT and SIGTERM in the calling thread. A program
// that may be sent a stop before Run() has installed its handlers (a
// daemon whose parent has already said "ready") blocks them first: the
// stop then stays pending and Run() receives it.
void BlockStopSignals(bool block);
// Takes the SIGINT and SIGTERM that arrived while they were blocked after
// Run() (a second Ctrl-C, the SIGTERM of a -p target's exit watcher): the
// recording has stopped already, and unblocking them must not end the
// program before it reports.
void DiscardPendingStopSignals();

struct RecorderRunOptions {
  // Stop on SIGINT or SIGTERM. Run() unblocks them once it handles them
  // and blocks them again when its loop ends, so that a second stop cannot
  // kill the program while it writes the profile (then
  // DiscardPendingStopSignals() and BlockStopSignals(false)).
  bool stop_on_signals = true;
  // Stop when this child exits (it is reaped; see Recorder::child_status()).
  pid_t child = 0;
  // How often the buffers are looked at besides the device's wake-ups (a
  // safety net); doubled after each look that finds nothing, up to 8x.
  std::chrono::milliseconds poll_interval{250};
  // A live view (tprofctl top): if set, called every `interval` with the
  // profile so far, the partial halves flushed first so that it holds every
  // sample delivered until then. Returning false stops the recording.
  // Intervals are counted from Run()'s start, not from the last call's end.
  std::function<bool(const Profile& so_far)> on_interval;
  std::chrono::milliseconds interval{1000};
};

class Recorder {
 public:
  // Starts a sampling session (errors as SamplingSession::Start's).
  [[nodiscard]] static Expected<Recorder> Start(const SamplingOptions& options,
                                                const std::string& device_path = TPROF_DEVICE_PATH);
  explicit Recorder(SamplingSession session);
  Recorder(Recorder&&) noexcept;
  Recorder& operator=(Recorder&&) noexcept;
  ~Recorder();

  // Runs the event loop until a stop (signal, child exit, RequestStop()),
  // then Finish()es. A failure to read the buffers ends it with that error.
  [[nodiscard]] Expected<Profile> Run(const RecorderRunOptions& options = {});
  // The per-sample context the profile keeps (profile.h; by default 10 ms
  // buckets): set it before Run().
  void SetContextOptions(const ContextOptions& context);
  // What Finish() copies of the system's state (SnapshotSystemState).
  void SetSnapshotOptions(const SnapshotOptions& snapshot);
  // Makes a running Run() return (from a signal-free thread or a callback).
  void RequestStop();
  // Stops sampling, reads everything left and returns the profile. Once.
  [[nodiscard]] Expected<Profile> Finish();
  // From on_interval: hands over what was counted since the last call
  // (ProfileBuilder::TakeInterval), so that a recording that never ends
  // holds one interval. The profile Run() returns then holds what came
  // after the last call, with the control area's totals of the whole
  // recording (lost samples).
  [[nodiscard]] Profile TakeInterval();

  // The child's wait status once Run() saw it exit (-1 before).
  int child_status() const;
  // The session, for its descriptor (windows) and totals.
  const SamplingSession& session() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace tprof

#endif  // TPROF_RECORDER_H_
