// tprofctl threads: drain and print per-thread metric deltas.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "cli_util.h"
#include "commands.h"
#include "tprof/json_writer.h"

namespace tprof::cli {

namespace {

struct ThreadsOptions {
  uint32_t pid = 0;  // 0: every process (TPROF_PID_ALL)
  uint64_t interval_ms = 0;
  uint64_t count = 1;
  bool json = false;
};

void PrintText(const std::vector<MetricSpec>& metrics, const DrainResult& r) {
  std::printf("%7s %7s %-16s", "PID", "TID", "COMM");
  for (const MetricSpec& m : metrics) std::printf(" %16s", MetricName(m).c_str());
  std::printf("\n");
  for (const ThreadMetrics& t : r.threads) {
    std::string comm = t.comm + (t.exited ? " (exited)" : "");
    std::printf("%7u %7u %-16s", t.pid, t.tid, comm.c_str());
    for (uint64_t v : t.values) std::printf(" %16" PRIu64, v);
    std::printf("\n");
  }
  std::printf("%zu threads", r.threads.size());
  if (r.untracked_threads)
    std::printf("; %" PRIu64 " threads untracked (table full: raise max_threads)",
                r.untracked_threads);
  std::printf("\n");
}

void PrintJson(const std::vector<MetricSpec>& metrics, const DrainResult& r) {
  for (const ThreadMetrics& t : r.threads) {
    JsonWriter w;
    w.BeginObject()
        .Field("pid", t.pid)
        .Field("tid", t.tid)
        .Field("identity", t.identity)
        .Field("comm", t.comm)
        .Field("exited", t.exited);
    w.Key("metrics").BeginObject();
    for (size_t i = 0; i < metrics.size() && i < t.values.size(); ++i)
      w.Field(MetricKey(metrics[i]), t.values[i]);
    w.EndObject().EndObject();
    std::printf("%s\n", w.str().c_str());
  }
  std::fflush(stdout);
}

int RunThreads(const ThreadsOptions& o) {
  const uint32_t pid = o.pid ? o.pid : TPROF_PID_ALL;
  const uint64_t interval_ms = o.interval_ms, count = o.count;
  const bool json = o.json;
  auto dev = OpenDeviceOrReport(Doing::kThreads);
  if (!dev) return 1;
  auto st = dev->GetMetricsStatus();
  if (!st) return ReportError(st.error(), Doing::kThreads);
  if (!st->enabled) {
    std::fprintf(stderr, "tprofctl: per-thread metrics are off: turn them on with "
                         "`tprofctl metrics on`\n");
    return 1;
  }
  for (uint64_t n = 0; n < count; ++n) {
    if (interval_ms) std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
    auto r = dev->DrainAll(pid);
    if (!r) return ReportError(r.error(), Doing::kThreads);
    std::sort(r->threads.begin(), r->threads.end(),
              [](const ThreadMetrics& a, const ThreadMetrics& b) {
                return a.values.empty() || b.values.empty() ? a.tid < b.tid
                                                            : a.values[0] > b.values[0];
              });
    if (json) {
      PrintJson(st->metrics, *r);
    } else {
      if (count > 1) std::printf("--- drain %llu ---\n", static_cast<unsigned long long>(n + 1));
      PrintText(st->metrics, *r);
    }
  }
  return 0;
}

}  // namespace

void AddThreadsCommand(CommandLine& cli) {
  auto o = std::make_shared<ThreadsOptions>();
  CLI::App* sub = cli.Add(
      cli.app(), "threads",
      "Drains the per-thread metric deltas: every thread whose metrics moved since the last "
      "drain (or read), once, then zeroes them. Threads that exited in between are shown once "
      "more, marked exited. Turn accounting on first: `tprofctl metrics on`.",
      [o] { return RunThreads(*o); });
  CLI::Option* all = sub->add_flag_callback(
      "--all", [o] { o->pid = 0; }, "every process (default; needs CAP_PERFMON/CAP_SYS_ADMIN)");
  sub->add_option("-p,--pid", o->pid, "one process (yours, or with ptrace-read rights over it)")
      ->transform(Decimal())
      ->check(CLI::Range(1u, TPROF_PID_ALL - 1))
      ->excludes(all);
  sub->add_option("--interval", o->interval_ms,
                  "wait MS milliseconds before each drain (default: drain now)")
      ->transform(Decimal());
  sub->add_option("--count", o->count, "drains to print with --interval (default 1)")
      ->transform(Decimal())
      ->check(CLI::PositiveNumber);
  sub->add_flag("--json", o->json, "one JSON object per thread per line");
}

}  // namespace tprof::cli
