// An interactive flame graph as one self-contained SVG file (after Brendan
// Gregg's flamegraph.pl): a frame per function of the folded stacks
// (report.h's StackRow: process, caller, function), its width the samples
// it and its callees hold, the root ("all") at the bottom and children in
// name order, so the same profile always draws the same picture.
//
// In a browser (the <script> and <style> are embedded; no external
// resources): hovering a frame shows its name, samples and share of the
// graph's samples; clicking zooms into it (its ancestors stay, faded, below
// it), "Reset Zoom" or Escape returns; "Search" (or Ctrl-F) takes a regular
// expression, paints the matching frames and shows the share of samples
// they hold ("Matched: P%", nested matches counted once), clicking it again
// clears. The URL can preset both: FILE.svg?s=REGEX searches on load.
//
// Names are XML-escaped; bytes that are not UTF-8, and control characters,
// read U+FFFD. Frames narrower than min_frame_width pixels are left out
// (with their callees), as flamegraph.pl does, so huge profiles stay
// small; the samples of their parents still count them.
#ifndef TPROF_FLAMEGRAPH_H_
#define TPROF_FLAMEGRAPH_H_

#include <string>
#include <vector>

#include "tprof/output/report.h"

namespace tprof {

struct FlameGraphOptions {
  std::string title = "tprof flame graph";
  std::string subtitle;  // e.g. the profile's path; none if empty
  int width = 1200;      // pixels, of the whole image
  double min_frame_width = 0.1;
};

// The SVG document (UTF-8). Rows with no frames or no samples add nothing.
[[nodiscard]] std::string RenderFlameGraph(const std::vector<StackRow>& stacks,
                                           const FlameGraphOptions& options = {});

}  // namespace tprof

#endif  // TPROF_FLAMEGRAPH_H_
