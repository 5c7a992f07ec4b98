// tprofctl record --continuous: the recording goes on until stopped
// (SIGINT, SIGTERM, the command's exit) and writes one gzipped pprof per
// interval into a directory (tprof/output/pprof_series.h), as fleet
// profilers ship profiles, instead of one profile file at the end.
#pragma once

#include <cstddef>
#include <cstdint>
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

// Runs the recorder (`run`'s child and signals stop it) and writes each
// interval's samples as a pprof file. An interval whose file is still
// being written when the next one ends is merged into the next (nothing
// is dropped); the samples after the last interval are the last file.
// Returns the whole recording's totals, or the recorder's error; a file
// that cannot be written is reported on stderr and its samples are lost
// to the series (counted in `failed`). The recorder holds one interval's
// counts at a time (Recorder::TakeInterval).
struct ContinuousResult {
  uint64_t samples = 0, lost = 0;
  size_t files = 0, failed = 0;
};
[[nodiscard]] Expected<ContinuousResult> RecordContinuously(Recorder& recorder,
                                                            RecorderRunOptions run,
                                                            const ContinuousOptions& options);

}  // namespace tprof::cli
