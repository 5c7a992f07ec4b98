// tprofctl threads: drain and print per-thread metric deltas.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "commands.h"
#include "tprof/output/json_format.h"
#include "tprof/device/thread_top.h"

namespace tprof::cli {

namespace {

struct ThreadsOptions {
  uint32_t pid = 0;  // 0: every process (TPROF_PID_ALL)
  std::optional<uint64_t> interval_ms;
  std::optional<uint64_t> count;
  bool json = false, top = false, batch = !::isatty(STDOUT_FILENO);
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
    nlohmann::ordered_json values = nlohmann::ordered_json::object();
    for (size_t i = 0; i < metrics.size() && i < t.values.size(); ++i)
      values[MetricKey(metrics[i])] = t.values[i];
    nlohmann::ordered_json j = {{"format_version", kJsonFormatVersion},
                                {"pid", t.pid},
                                {"tid", t.tid},
                                {"identity", t.identity},
                                {"comm", t.comm},
                                {"exited", t.exited},
                                {"metrics", std::move(values)}};
    std::printf("%s\n", j.dump().c_str());
  }
  std::fflush(stdout);
}

// A metric's value with its unit: times in ms, counts as they are.
std::string FormatValue(const MetricSpec& m, uint64_t v) {
  char buf[32];
  if (m.type == TPROF_METRIC_TIME)
    std::snprintf(buf, sizeof(buf), "%.1f ms", static_cast<double>(v) / 1e6);
  else
    std::snprintf(buf, sizeof(buf), "%" PRIu64, v);
  return buf;
}

volatile std::sig_atomic_t g_stop = 0;
void OnStopSignal(int) { g_stop = 1; }

// tprofctl threads --top: the live table (tprof/thread_top.h).
int RunThreadsTop(const Device& dev, const std::vector<MetricSpec>& metrics, uint32_t pid,
                  uint64_t interval_ms, uint64_t count, bool batch) {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  const int time_metric = TimeMetricIndex(metrics);
  auto before = ReadThreadTotals(dev, pid);
  if (!before) return ReportError(before.error(), Doing::kThreads);
  auto last = std::chrono::steady_clock::now();
  for (uint64_t n = 0; (count == 0 || n < count) && !g_stop; ++n) {
    std::this_thread::sleep_until(last + std::chrono::milliseconds(interval_ms));
    if (g_stop) break;
    auto now = ReadThreadTotals(dev, pid);
    if (!now) return ReportError(now.error(), Doing::kThreads);
    auto t = std::chrono::steady_clock::now();
    uint64_t interval_ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t - last).count());
    last = t;
    ThreadTopFrame frame = DiffThreadTotals(*before, *now, interval_ns, time_metric);
    before = std::move(now);
    if (!batch) std::printf("\033[H\033[2J");
    std::printf("tprofctl threads --top: %zu of %zu threads moved in %.2f s", frame.rows.size(),
                frame.threads, static_cast<double>(interval_ns) / 1e9);
    if (frame.unreadable) std::printf(" (%u not readable: another user's)", frame.unreadable);
    std::printf("\n%7s %7s %-16s %6s", "PID", "TID", "COMM", "%CPU");
    for (const MetricSpec& m : metrics) std::printf(" %16s", MetricName(m).c_str());
    std::printf("\n");
    for (const ThreadTopRow& r : frame.rows) {
      std::printf("%7u %7u %-16s", r.thread.pid, r.thread.tid, r.thread.comm.c_str());
      if (r.cpu_percent >= 0)
        std::printf(" %6.1f", r.cpu_percent);
      else
        std::printf(" %6s", "-");
      for (size_t i = 0; i < metrics.size() && i < r.thread.values.size(); ++i)
        std::printf(" %16s", FormatValue(metrics[i], r.thread.values[i]).c_str());
      std::printf("\n");
    }
    if (batch) std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}

int RunThreads(const ThreadsOptions& o) {
  const uint32_t pid = o.pid ? o.pid : TPROF_PID_ALL;
  const uint64_t interval_ms = o.interval_ms.value_or(0), count = o.count.value_or(1);
  const bool json = o.json, top = o.top, batch = o.batch;
  const bool interval_given = o.interval_ms.has_value(), count_given = o.count.has_value();
  auto dev = OpenDeviceOrReport(Doing::kThreads);
  if (!dev) return 1;
  auto st = dev->GetMetricsStatus();
  if (!st) return ReportError(st.error(), Doing::kThreads);
  if (!st->enabled) {
    std::fprintf(stderr, "tprofctl: per-thread metrics are off: turn them on with "
                         "`tprofctl metrics on`\n");
    return 1;
  }
  if (top) {
    if (json) {
      std::fprintf(stderr, "tprofctl threads: --top is a table; --json goes without it\n");
      return kExitUsage;
    }
    return RunThreadsTop(*dev, st->metrics, pid, interval_given ? std::max<uint64_t>(interval_ms, 10) : 1000,
                         count_given ? count : 0, batch);
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
      "Drains the per-thread metric deltas, or shows them live (--top). A drain prints every "
      "thread whose metrics moved since the last drain (or read), once, then zeroes them; "
      "threads that exited in between are shown once more, marked exited. Turn accounting on "
      "first: `tprofctl metrics on`.",
      [o] { return RunThreads(*o); });
  CLI::Option* all = sub->add_flag_callback(
      "--all", [o] { o->pid = 0; }, "every process (default; needs CAP_PERFMON/CAP_SYS_ADMIN)");
  sub->add_option("-p,--pid", o->pid, "one process (yours, or with ptrace-read rights over it)")
      ->transform(Decimal())
      ->check(CLI::Range(1u, TPROF_PID_ALL - 1))
      ->excludes(all);
  sub->add_option("--interval", o->interval_ms,
                  "wait MS milliseconds before each drain (default: drain now; --top: 1000)")
      ->transform(Decimal());
  sub->add_option("--count", o->count,
                  "drains to print with --interval (default 1; --top: until Ctrl-C)")
      ->transform(Decimal())
      ->check(CLI::PositiveNumber);
  sub->add_flag("--json", o->json, "one JSON object per thread per line");
  sub->add_flag("--top", o->top,
                "a live table instead, refreshed every --interval MS until Ctrl-C or --count "
                "refreshes: each thread's share of a CPU and what its metrics added, heaviest "
                "first. It reads totals, so it takes nothing from drains or runtimes polling "
                "their own deltas.");
  sub->add_flag("--batch", o->batch, "with --top: no screen clearing (implied when not a terminal)");
}

}  // namespace tprof::cli
