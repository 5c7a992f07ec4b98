// tprofctl metrics: turn per-thread metrics accounting on and off.
#include <cstdio>
#include <string>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "commands.h"
#include "tprof/json_format.h"

namespace tprof::cli {

namespace {

constexpr const char* kDefaultMetrics = "time,dispatches";

void Usage(FILE* out) {
  std::string known;
  for (const std::string& n : KnownMetricNames()) known += (known.empty() ? "" : ", ") + n;
  std::fprintf(out,
               "usage: tprofctl metrics on [--metrics LIST]\n"
               "       tprofctl metrics off\n"
               "       tprofctl metrics [status] [--json]\n\n"
               "Per-thread metrics: the module accounts, for every thread, the metrics\n"
               "in LIST (default %s) at each context switch; read them with\n"
               "`tprofctl threads`. `on` and `off` need CAP_PERFMON or CAP_SYS_ADMIN;\n"
               "`on` while on restarts with zeroed accumulators.\n"
               "  LIST: up to %d of %s, rHEX (a raw event)\n",
               kDefaultMetrics, TPROF_MAX_METRICS, known.c_str());
}

int Status(const Device& dev, bool json) {
  auto st = dev.GetMetricsStatus();
  if (!st) return ReportError(st.error());
  if (json) {
    nlohmann::ordered_json names = nlohmann::ordered_json::array();
    for (const MetricSpec& m : st->metrics) names.push_back(MetricName(m));
    nlohmann::ordered_json j = {{"format_version", kJsonFormatVersion},
                                {"enabled", st->enabled},
                                {"metrics", std::move(names)},
                                {"table_capacity", st->table_capacity},
                                {"table_used", st->table_used},
                                {"untracked_threads", st->untracked_threads},
                                {"reclaimed_threads", st->reclaimed_threads},
                                {"uncounted_switches", st->uncounted_switches},
                                {"listed", st->listed}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  if (!st->enabled) {
    std::printf("per-thread metrics: off (turn on with `tprofctl metrics on`)\n");
    return 0;
  }
  std::string names;
  for (const MetricSpec& m : st->metrics) names += (names.empty() ? "" : ",") + MetricName(m);
  std::printf("per-thread metrics: on (%s)\n", names.c_str());
  std::printf("threads tracked:    %u of %u\n", st->table_used, st->table_capacity);
  std::printf("nonzero, to drain:  %u\n", st->listed);
  std::printf("untracked (table full): %llu%s\n",
              static_cast<unsigned long long>(st->untracked_threads),
              st->untracked_threads ? " (raise the module parameter max_threads)" : "");
  std::printf("exited, dropped undrained: %llu%s\n",
              static_cast<unsigned long long>(st->reclaimed_threads),
              st->reclaimed_threads ? " (drain more often: tprofctl threads, or raise max_threads)" : "");
  if (st->uncounted_switches)
    std::printf("switches without event counters: %llu (a CPU had just come online; time is exact)\n",
                static_cast<unsigned long long>(st->uncounted_switches));
  return 0;
}

}  // namespace

int RunMetrics(const Args& args) {
  std::string action = "status";
  std::string list = kDefaultMetrics;
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      Usage(stdout);
      return 0;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--metrics" && i + 1 < args.size()) {
      list = args[++i];
    } else if (i == 0 && (a == "on" || a == "off" || a == "status")) {
      action = a;
    } else {
      std::fprintf(stderr, "tprofctl metrics: unexpected '%s'\n\n", a.c_str());
      Usage(stderr);
      return 2;
    }
  }
  auto specs = ParseMetricList(list);
  if (!specs) {
    std::fprintf(stderr, "tprofctl metrics: %s\n", specs.error().message().c_str());
    return 2;
  }
  auto dev = OpenDeviceOrReport();
  if (!dev) return 1;
  if (action == "on") {
    if (auto st = dev->EnableMetrics(*specs); !st) return ReportError(st.error());
    std::printf("per-thread metrics on: %s\n", list.c_str());
    return 0;
  }
  if (action == "off") {
    if (auto st = dev->DisableMetrics(); !st) return ReportError(st.error());
    std::printf("per-thread metrics off\n");
    return 0;
  }
  return Status(*dev, json);
}

}  // namespace tprof::cli
