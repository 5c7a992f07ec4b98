// tprofctl record --continuous: the recording goes on until stopped
// (SIGINT, SIGTERM, the command's exit) and writes one gzipped pprof per
// interval into a directory (tprof/output/pprof_series.h), as fleet
// profilers ship profiles, instead of one profile file at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tprof/analysis/profile.h"
#include "tprof/base/expected.h"
#include "tprof/device/recorder.h"

namespace tprof::cli {

struct ContinuousOptions {
  bool on = false;         // --continuous
  double interval_s = 60;  // --interval
  std::string out_dir;     // --out-dir
  size_t keep = 100;       // --keep (0: every file)
  bool quiet = false;      // -q: no line per interval
};

struct ContinuousResult {
  uint64_t samples = 0, lost = 0;
  size_t files = 0, failed = 0;
};

// The series being written. Constructed before sampling starts: reading
// the kernel's symbols takes seconds under emulation, and samples taken
// meanwhile would wait undrained (and the first interval, timed from
// Record(), would claim less time than it covered).
class ContinuousRecording {
 public:
  explicit ContinuousRecording(const ContinuousOptions& options);
  ~ContinuousRecording();
  ContinuousRecording(const ContinuousRecording&) = delete;
  ContinuousRecording& operator=(const ContinuousRecording&) = delete;

  // Runs the recorder (`run`'s child and signals stop it) and writes each
  // interval's samples as a pprof file. An interval whose file is still
  // being written when the next one ends is merged into the next (nothing
  // is dropped); the samples after the last interval are the last file.
  // Returns the whole recording's totals, or the recorder's error; a file
  // that cannot be written is reported on stderr and its samples are lost
  // to the series (counted in `failed`). The recorder holds one interval's
  // counts at a time (Recorder::TakeInterval). Once only.
  [[nodiscard]] Expected<ContinuousResult> Record(Recorder& recorder, RecorderRunOptions run);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace tprof::cli
