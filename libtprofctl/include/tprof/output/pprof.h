// A Profile as Google's pprof format: a gzipped `perftools.profiles.Profile`
// protocol buffer (libtprofctl/proto/profile.proto, pprof's own file), the
// input of `pprof`, `go tool pprof`, speedscope, Perfetto and most other
// profile viewers.
//
// What goes where
//   sample_type   [samples/count, cpu/nanoseconds]: a sample's count, and
//                 count x period, period = 1e9 / frequency_hz (the
//                 profile's `frequency_hz` attribute). A profile sampled on
//                 a counter (--event: no frequency) has only samples/count.
//                 period_type cpu/nanoseconds and period with the second.
//   sample        one per sampled instruction (SampleKey) and caller: its
//                 locations are [instruction, caller] (leaf first), or the
//                 instruction alone for the samples without a caller;
//                 labels pid (num) and comm (str, the process's latest
//                 name); idle samples are pid 0, comm "idle", as in the
//                 reports (report.h). (pprof itself reads a numeric label
//                 of 0 as absent: there, idle samples have comm only.)
//   location      one per (address space, address, frame kind): the leaf's
//                 address as sampled; a caller's is its return address, but
//                 symbolized (function, line, mapping) at return address - 1,
//                 the call instruction, as the folded stacks do. Functions
//                 DWARF says are inlined there (Location::inlined) are
//                 Lines of the same location, innermost first (at the
//                 symbolizer's line), then the function they were inlined
//                 into (line 0: its call line is unknown).
//   function      one per (name, source file): the symbolizer's function
//                 name (Location::FunctionName(), so "libc.so.6+0x1a2b"
//                 for an unnamed address) and source file; the line is on
//                 the location's Line.
//   mapping       Symbolizer::MappingAt(): file mappings with their start,
//                 limit, file offset, path and GNU build id, and one
//                 "[kernel.kallsyms]" mapping for kernel addresses. The main
//                 executable of the process with the most samples comes
//                 first (pprof shows mapping[0] as the profile's "File:").
//                 has_functions / has_filenames / has_line_numbers say what
//                 the symbolizer found, so pprof does not symbolize again.
//                 JIT code and addresses in no mapping have none (mapping
//                 id 0).
//   comment       the profile's attributes (KEY=VALUE), samples taken,
//                 lost samples and lost records, and why kernel symbols are
//                 missing if they are.
//   duration_nanos  last - first sample time.
#ifndef TPROF_PPROF_H_
#define TPROF_PPROF_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "tprof/base/expected.h"
#include "tprof/analysis/profile.h"
#include "tprof/analysis/symbolizer.h"

namespace tprof {

struct PprofOptions {
  std::optional<uint32_t> pid;  // only this process (0: the idle samples)
  // String labels every sample carries besides pid and comm (a continuous
  // series' "host").
  std::map<std::string, std::string> labels;
  // The profile's time_nanos (wall clock, ns since the epoch) and
  // duration_nanos; 0: duration from the samples' times, no time_nanos.
  int64_t time_nanos = 0, duration_nanos = 0;
};

// The profile as gzipped protocol buffer bytes (a .pb.gz file). Errors:
// EOVERFLOW (a message over protobuf's 2 GiB limit), EIO (compression).
[[nodiscard]] Expected<std::string> EncodePprof(const Profile& profile, Symbolizer& symbolizer,
                                                const PprofOptions& options = {});

}  // namespace tprof

#endif  // TPROF_PPROF_H_
