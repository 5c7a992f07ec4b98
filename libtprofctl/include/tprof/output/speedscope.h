// The folded stacks (report.h's StackRow) in speedscope's file format
// (https://www.speedscope.app/file-format-schema.json), for
// https://www.speedscope.app and other viewers that read it:
//
//   $schema        the schema's URL
//   shared.frames  one {"name"} per distinct frame name, in first-use order
//   profiles       "sampled" profiles: one per process (named "NAME (pid
//                  N)", "idle" for pid 0; by samples, descending, the
//                  process frame left out since the profile names it), or
//                  one for all ("all processes", the process frame first)
//                  each with unit "nanoseconds" and weights of samples x
//                  the sampling period (CPU time, as pprof's), or unit
//                  "none" and weights of sample counts when the profile
//                  was sampled on an event; startValue 0, endValue the
//                  weights' sum, `samples` as frame-index stacks root
//                  first (caller, function), one weight per stack.
//   name, activeProfileIndex 0, exporter "tprofctl"
#ifndef TPROF_SPEEDSCOPE_H_
#define TPROF_SPEEDSCOPE_H_

#include <string>
#include <vector>

#include "tprof/output/report.h"

namespace tprof {

struct SpeedscopeOptions {
  std::string name = "tprof profile";
  bool per_process = true;  // false: one profile of every process
  uint64_t period_ns = 0;   // report.h's SamplingPeriodNs; 0: weights are counts
};

// The JSON document. Rows with no frames or no samples are left out.
[[nodiscard]] std::string RenderSpeedscope(const std::vector<StackRow>& stacks,
                                           const SpeedscopeOptions& options = {});

}  // namespace tprof

#endif  // TPROF_SPEEDSCOPE_H_
