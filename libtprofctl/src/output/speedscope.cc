#include "tprof/output/speedscope.h"

#include <algorithm>
#include <cstdint>
#include <map>

#include "base/json.h"

namespace tprof {

namespace {

struct SampledProfile {
  std::string name;
  uint32_t pid = 0;
  uint64_t samples = 0;
  std::vector<const StackRow*> rows;
};

}  // namespace

std::string RenderSpeedscope(const std::vector<StackRow>& stacks,
                             const SpeedscopeOptions& options) {
  std::vector<SampledProfile> profiles;
  if (options.per_process) {
    std::map<uint32_t, SampledProfile> by_pid;
    for (const StackRow& row : stacks) {
      if (row.frames.empty() || row.samples == 0) continue;
      SampledProfile& p = by_pid[row.pid];
      if (p.rows.empty()) {
        p.pid = row.pid;
        p.name = row.pid == 0 ? row.frames[0]
                              : row.frames[0] + " (pid " + std::to_string(row.pid) + ")";
      }
      p.samples += row.samples;
      p.rows.push_back(&row);
    }
    for (auto& [pid, p] : by_pid) profiles.push_back(std::move(p));
    std::stable_sort(profiles.begin(), profiles.end(),
                     [](const SampledProfile& a, const SampledProfile& b) {
                       return a.samples > b.samples;
                     });
  } else {
    SampledProfile all;
    all.name = "all processes";
    for (const StackRow& row : stacks) {
      if (row.frames.empty() || row.samples == 0) continue;
      all.samples += row.samples;
      all.rows.push_back(&row);
    }
    profiles.push_back(std::move(all));
  }

  // Frame indices in first-use order, profile by profile.
  std::map<std::string, uint64_t> index;
  std::vector<const std::string*> frames;
  const size_t skip = options.per_process ? 1 : 0;  // the process frame
  for (const SampledProfile& p : profiles)
    for (const StackRow* row : p.rows)
      for (size_t i = skip; i < row->frames.size(); ++i)
        if (index.try_emplace(row->frames[i], frames.size()).second)
          frames.push_back(&row->frames[i]);

  Json shared_frames = Json::array();
  for (const std::string* f : frames) shared_frames.push_back({{"name", *f}});
  Json out_profiles = Json::array();
  const uint64_t weight = options.period_ns ? options.period_ns : 1;  // per sample
  for (const SampledProfile& p : profiles) {
    Json samples = Json::array(), weights = Json::array();
    for (const StackRow* row : p.rows) {
      Json stack = Json::array();
      for (size_t i = skip; i < row->frames.size(); ++i) stack.push_back(index.at(row->frames[i]));
      samples.push_back(std::move(stack));
      weights.push_back(row->samples * weight);
    }
    out_profiles.push_back({{"type", "sampled"},
                            {"name", p.name},
                            {"unit", options.period_ns ? "nanoseconds" : "none"},
                            {"startValue", 0},
                            {"endValue", p.samples * weight},
                            {"samples", std::move(samples)},
                            {"weights", std::move(weights)}});
  }
  // speedscope's own format: its "$schema" is the version, no format_version.
  Json j = {{"$schema", "https://www.speedscope.app/file-format-schema.json"},
            {"shared", {{"frames", std::move(shared_frames)}}},
            {"profiles", std::move(out_profiles)},
            {"name", options.name},
            {"activeProfileIndex", 0},
            {"exporter", "tprofctl"}};
  return j.dump() + "\n";
}

}  // namespace tprof
