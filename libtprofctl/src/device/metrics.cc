#include "tprof/device/metrics.h"

#include "tprof/base/event_names.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tprof {

namespace {

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

const EventName* NamedMetric(const MetricSpec& metric) {
  const EventName* e = FindEvent(metric.type, metric.config);
  return e && (e->uses & kUseMetric) ? e : nullptr;
}

}  // namespace

std::string MetricName(const MetricSpec& metric) {
  if (const EventName* e = NamedMetric(metric)) return e->name;
  if (metric.type == TPROF_METRIC_RAW) return RawEventName(metric.config);
  return "type" + std::to_string(metric.type) + ":" + Hex(metric.config);
}

std::string MetricKey(const MetricSpec& metric) {
  if (const EventName* e = NamedMetric(metric)) return e->key;
  if (metric.type == TPROF_METRIC_RAW) return "raw_" + Hex(metric.config);
  return "type" + std::to_string(metric.type) + "_" + Hex(metric.config);
}

std::vector<std::string> KnownMetricNames() {
  std::vector<std::string> names;
  for (const EventName& e : EventNames())
    if (e.uses & kUseMetric) names.push_back(e.name);
  return names;
}

Expected<std::vector<MetricSpec>> ParseMetricList(std::string_view list) {
  auto bad = [](const std::string& what) {
    std::string known;
    for (const std::string& n : KnownMetricNames()) known += (known.empty() ? "" : ", ") + n;
    return Error::FromErrno(EINVAL, what + " (known: " + known + ", rHEX; at most " +
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
    if (const EventName* e = FindEventName(name, kUseMetric); e && name == e->name) {
      spec = {e->type, e->config};
      found = true;
    } else if (auto code = ParseRawEventName(name)) {
      spec = {TPROF_METRIC_RAW, *code};
      found = true;
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
