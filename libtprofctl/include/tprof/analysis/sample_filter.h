// Selecting samples by thread, CPU, process name and time (tprofctl's
// --tid, --cpu, --comm, --time on every report). FilterProfile rebuilds a
// profile's aggregates (samples, caller edges, stack samples, CPU totals)
// from the selected part of its context table (Profile::contexts, format
// 1.2), so every report and export reads the result unchanged.
//
// Threads and CPUs are the sample records' own; process names are the
// reports' (Profile::ProcessDisplayName: a process's latest name, "idle"
// for the idle samples): the kernel names processes, not threads. Times
// are whole buckets of the context's granularity: a sample counts as at
// the start of its bucket, and a window [START, END) holds the buckets
// whose start lies in [START, END) once both are rounded down to the
// granularity, so adjacent windows partition the samples exactly.
#ifndef TPROF_SAMPLE_FILTER_H_
#define TPROF_SAMPLE_FILTER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tprof/base/expected.h"
#include "tprof/analysis/profile.h"

namespace tprof {

// A time bound: relative to the profile's first sample, or absolute on the
// sampling clock (the kernel's local_clock(), as Profile::first_time_ns).
struct TimeBound {
  uint64_t ns = 0;
  bool absolute = false;
  bool operator==(const TimeBound&) const = default;
};

struct SampleFilter {
  std::vector<uint32_t> tids;        // empty: any
  std::vector<uint32_t> cpus;        // empty: any
  std::vector<std::string> comms;    // empty: any
  std::optional<TimeBound> start;    // inclusive
  std::optional<TimeBound> end;      // exclusive

  bool empty() const { return tids.empty() && cpus.empty() && comms.empty() && !start && !end; }
  // Whether the filter needs the context table (all but --comm do).
  bool NeedsContext() const { return !tids.empty() || !cpus.empty() || start || end; }
  // "tid 12,13; cpu 0-1; time [0.5 s, end)": what a filtered report says it shows.
  std::string Describe() const;
};

// "3", "0-3", "0-3,7": sorted, without repeats. EINVAL on anything else
// (empty items, a range backwards, numbers beyond 32 bits).
[[nodiscard]] Expected<std::vector<uint32_t>> ParseIdList(std::string_view text);
// "START,END", either side empty for open. A bound is a decimal number
// with an optional unit (s, ms, us, ns): seconds from the first sample by
// default; with a leading '@' an absolute time on the sampling clock,
// nanoseconds by default. EINVAL when malformed or END < START (both of
// one kind).
[[nodiscard]] Status ParseTimeRange(std::string_view text, SampleFilter* filter);

// The profile restricted to the selected samples. Tables that describe
// the machine (processes, mappings, symbols, the stack table) stay whole.
// Lost samples stay only where their CPU is known and selected (a --cpu
// filter alone); records.samples counts the selected samples; the
// attribute "filter" says what was selected.
// ENODATA when the filter needs context the profile does not have.
[[nodiscard]] Expected<Profile> FilterProfile(const Profile& profile, const SampleFilter& filter);

// What each of the filter's selectors could have chosen in `profile`, for
// a filter that chose nothing: "the samples span 0 to 3.41 s", "the
// processes: a, b, idle", "threads 12-15", "CPUs 0-1" (the first dozen
// names or ids of each, and how many more), joined by "; ".
std::string DescribeSelectable(const Profile& profile, const SampleFilter& filter);

}  // namespace tprof

#endif  // TPROF_SAMPLE_FILTER_H_
