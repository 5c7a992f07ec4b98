#include "tprof/speedscope.h"

#include <algorithm>
#include <cstdint>
#include <map>

#include "tprof/json_writer.h"

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

  JsonWriter w;
  w.BeginObject()
      .Field("$schema", "https://www.speedscope.app/file-format-schema.json")
      .Key("shared")
      .BeginObject()
      .Key("frames")
      .BeginArray();
  for (const std::string* f : frames) w.BeginObject().Field("name", *f).EndObject();
  w.EndArray().EndObject();
  w.Key("profiles").BeginArray();
  for (const SampledProfile& p : profiles) {
    w.BeginObject()
        .Field("type", "sampled")
        .Field("name", p.name)
        .Field("unit", "none")
        .Field("startValue", uint64_t{0})
        .Field("endValue", p.samples)
        .Key("samples")
        .BeginArray();
    for (const StackRow* row : p.rows) {
      w.BeginArray();
      for (size_t i = skip; i < row->frames.size(); ++i) w.Uint(index.at(row->frames[i]));
      w.EndArray();
    }
    w.EndArray().Key("weights").BeginArray();
    for (const StackRow* row : p.rows) w.Uint(row->samples);
    w.EndArray().EndObject();
  }
  w.EndArray()
      .Field("name", options.name)
      .Field("activeProfileIndex", uint64_t{0})
      .Field("exporter", "tprofctl")
      .EndObject();
  return w.str() + "\n";
}

}  // namespace tprof
