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
//                  each with unit "none" (weights are sample counts),
//                  startValue 0, endValue its samples, `samples` as
//                  frame-index stacks root first (caller, function) and
//                  `weights` their sample counts, one per stack.
//   name, activeProfileIndex 0, exporter "tprofctl"
#ifndef TPROF_SPEEDSCOPE_H_
#define TPROF_SPEEDSCOPE_H_

#include <string>
#include <vector>

#include "tprof/report.h"

namespace tprof {

struct SpeedscopeOptions {
  std::string name = "tprof profile";
  bool per_process = true;  // false: one profile of every process
};

// The JSON document. Rows with no frames or no samples are left out.
[[nodiscard]] std::string RenderSpeedscope(const std::vector<StackRow>& stacks,
                                           const SpeedscopeOptions& options = {});

}  // namespace tprof

#endif  // TPROF_SPEEDSCOPE_H_
