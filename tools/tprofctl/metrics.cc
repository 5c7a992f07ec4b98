// tprofctl metrics: turn per-thread metrics accounting on and off.
#include <cstdio>
#include <memory>
#include <string>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "commands.h"
#include "tprof/output/json_format.h"

namespace tprof::cli {

namespace {

constexpr const char* kDefaultMetrics = "time,dispatches";

std::string Description() {
  std::string known;
  for (const std::string& n : KnownMetricNames()) known += (known.empty() ? "" : ", ") + n;
  return "Turns per-thread metrics on or off and shows their state. The module accounts, for every thread, the metrics in LIST "
         "(default " + std::string(kDefaultMetrics) + ") at each context switch; read them with "
         "`tprofctl threads`. `on` and `off` need CAP_PERFMON or CAP_SYS_ADMIN; `on` while on "
         "restarts with zeroed accumulators. LIST: up to " + std::to_string(TPROF_MAX_METRICS) +
         " of " + known + ", rHEX (a raw event).";
}

struct MetricsOptions {
  std::string action = "status";
  std::string list = kDefaultMetrics;
  bool json = false;
};

int Status(const Device& dev, bool json) {
  auto st = dev.GetMetricsStatus();
  if (!st) return ReportError(st.error(), Doing::kMetrics);
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
                                {"index_rehashes", st->index_rehashes},
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

int RunMetrics(const MetricsOptions& o) {
  const std::string& action = o.action;
  const std::string& list = o.list;
  auto specs = ParseMetricList(list);
  if (!specs) {
    std::fprintf(stderr, "tprofctl metrics: %s\n", specs.error().message().c_str());
    return kExitUsage;
  }
  auto dev = OpenDeviceOrReport(Doing::kMetrics);
  if (!dev) return 1;
  if (action == "on") {
    if (auto st = dev->EnableMetrics(*specs); !st) return ReportError(st.error(), Doing::kMetrics);
    std::printf("per-thread metrics on: %s\n", list.c_str());
    return 0;
  }
  if (action == "off") {
    if (auto st = dev->DisableMetrics(); !st) return ReportError(st.error(), Doing::kMetrics);
    std::printf("per-thread metrics off\n");
    return 0;
  }
  return Status(*dev, o.json);
}

}  // namespace

void AddMetricsCommand(CommandLine& cli) {
  auto o = std::make_shared<MetricsOptions>();
  CLI::App* sub = cli.Add(cli.app(), "metrics", Description(), [o] { return RunMetrics(*o); });
  sub->add_option("action", o->action, "on, off or status (default)")
      ->check(CLI::IsMember({"on", "off", "status"}));
  sub->add_option("--metrics", o->list, "with on: the metrics to account (comma-separated)");
  sub->add_flag("--json", o->json, "status as one JSON object");
}

}  // namespace tprof::cli
