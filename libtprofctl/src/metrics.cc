#include "tprof/metrics.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tprof {

namespace {

struct NamedMetric {
  const char* name;
  const char* key;
  MetricSpec spec;
};

// Keep in step with kmod/core/metrics_config.c (the module parameter).
constexpr NamedMetric kNamedMetrics[] = {
    {"time", "time_ns", {TPROF_METRIC_TIME, 0}},
    {"dispatches", "dispatches", {TPROF_METRIC_DISPATCHES, 0}},
    {"cpu-clock", "cpu_clock_ns", {TPROF_METRIC_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK}},
    {"page-faults", "page_faults", {TPROF_METRIC_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS}},
    {"minor-faults", "minor_faults", {TPROF_METRIC_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN}},
    {"major-faults", "major_faults", {TPROF_METRIC_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ}},
    {"context-switches", "context_switches",
     {TPROF_METRIC_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES}},
    {"cpu-migrations", "cpu_migrations", {TPROF_METRIC_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS}},
    {"cycles", "cycles", {TPROF_METRIC_HARDWARE, PERF_COUNT_HW_CPU_CYCLES}},
    {"instructions", "instructions", {TPROF_METRIC_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS}},
    {"cache-references", "cache_references",
     {TPROF_METRIC_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES}},
    {"cache-misses", "cache_misses", {TPROF_METRIC_HARDWARE, PERF_COUNT_HW_CACHE_MISSES}},
    {"branches", "branches", {TPROF_METRIC_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS}},
    {"branch-misses", "branch_misses", {TPROF_METRIC_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES}},
};

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string MetricName(const MetricSpec& metric) {
  for (const NamedMetric& m : kNamedMetrics)
    if (m.spec == metric) return m.name;
  if (metric.type == TPROF_METRIC_RAW) return "raw:" + Hex(metric.config);
  return "type" + std::to_string(metric.type) + ":" + Hex(metric.config);
}

std::string MetricKey(const MetricSpec& metric) {
  for (const NamedMetric& m : kNamedMetrics)
    if (m.spec == metric) return m.key;
  if (metric.type == TPROF_METRIC_RAW) return "raw_" + Hex(metric.config);
  return "type" + std::to_string(metric.type) + "_" + Hex(metric.config);
}

std::vector<std::string> KnownMetricNames() {
  std::vector<std::string> names;
  for (const NamedMetric& m : kNamedMetrics) names.push_back(m.name);
  return names;
}

Expected<std::vector<MetricSpec>> ParseMetricList(std::string_view list) {
  auto bad = [](const std::string& what) {
    std::string known;
    for (const std::string& n : KnownMetricNames()) known += (known.empty() ? "" : ", ") + n;
    return Error::FromErrno(EINVAL, what + " (known: " + known + ", raw:CODE; at most " +
                                        std::to_string(TPROF_MAX_METRICS) + ")");
  };
  std::vector<MetricSpec> specs;
  size_t pos = 0;
  while (true) {
    size_t comma = list.find(',', pos);
    std::string_view name = list.substr(pos, comma == std::string_view::npos ? comma : comma - pos);
    if (name.empty()) return bad("empty metric name in '" + std::string(list) + "'");
    MetricSpec spec;
    bool found = false;
    for (const NamedMetric& m : kNamedMetrics) {
      if (name == m.name) {
        spec = m.spec;
        found = true;
      }
    }
    if (!found && name.substr(0, 4) == "raw:") {
      std::string code(name.substr(4));
      char* end = nullptr;
      errno = 0;
      spec = {TPROF_METRIC_RAW, std::strtoull(code.c_str(), &end, 0)};
      found = !code.empty() && end && *end == '\0' && errno == 0;
    }
    if (!found) return bad("unknown metric '" + std::string(name) + "'");
    if (std::find(specs.begin(), specs.end(), spec) != specs.end())
      return bad("metric '" + std::string(name) + "' given twice");
    specs.push_back(spec);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  if (specs.size() > TPROF_MAX_METRICS) return bad("too many metrics");
  return specs;
}

ThreadMetrics ThreadMetricsFromRecord(const tprof_thread_metrics& record) {
  ThreadMetrics t;
  t.pid = record.pid;
  t.tid = record.tid;
  t.identity = record.identity;
  t.exited = (record.flags & TPROF_THREAD_EXITED) != 0;
  char comm[sizeof(record.comm) + 1] = {};
  std::memcpy(comm, record.comm, sizeof(record.comm));
  t.comm = comm;
  uint32_t n = std::min<uint32_t>(record.nr_metrics, TPROF_MAX_METRICS);
  t.values.assign(record.values, record.values + n);
  return t;
}

}  // namespace tprof
