// tprofctl threads: drain and print per-thread metric deltas.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <thread>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "commands.h"
#include "tprof/json_format.h"
#include "tprof/thread_top.h"

namespace tprof::cli {

namespace {

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: tprofctl threads [--pid PID | --all] [--interval MS] [--count N] [--json]\n"
               "       tprofctl threads --top [--pid PID | --all] [--interval MS] [--count N] [--batch]\n\n"
               "Drains the per-thread metric deltas: every thread whose metrics moved\n"
               "since the last drain (or read), once, then zeroes them. Threads that\n"
               "exited in between are shown once more, marked exited.\n"
               "  --all          every process (default; needs CAP_PERFMON/CAP_SYS_ADMIN)\n"
               "  --pid PID      one process (yours, or with ptrace-read rights over it)\n"
               "  --interval MS  wait MS milliseconds before each drain (default: drain now)\n"
               "  --count N      drains to print with --interval (default 1)\n"
               "  --json         one JSON object per thread per line\n"
               "  --top          a live table instead, refreshed every --interval MS (default\n"
               "                 1000) until Ctrl-C or --count refreshes: each thread's share\n"
               "                 of a CPU and what its metrics added, heaviest first. It reads\n"
               "                 totals, so it takes nothing from drains or runtimes polling\n"
               "                 their own deltas.\n"
               "  --batch        with --top: no screen clearing (implied when not a terminal)\n"
               "Turn accounting on first: `tprofctl metrics on`.\n");
}

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
  if (!before) return ReportError(before.error());
  auto last = std::chrono::steady_clock::now();
  for (uint64_t n = 0; (count == 0 || n < count) && !g_stop; ++n) {
    std::this_thread::sleep_until(last + std::chrono::milliseconds(interval_ms));
    if (g_stop) break;
    auto now = ReadThreadTotals(dev, pid);
    if (!now) return ReportError(now.error());
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

}  // namespace

int RunThreads(const Args& args) {
  uint32_t pid = TPROF_PID_ALL;
  uint64_t interval_ms = 0, count = 1;
  bool json = false, top = false, batch = !::isatty(STDOUT_FILENO);
  bool interval_given = false, count_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool has_value = i + 1 < args.size();
    if (a == "-h" || a == "--help") {
      Usage(stdout);
      return 0;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--top") {
      top = true;
    } else if (a == "--batch") {
      batch = true;
    } else if (a == "--all") {
      pid = TPROF_PID_ALL;
    } else if (a == "--pid" && has_value) {
      auto v = ParseNumber(a, args[++i]);
      if (!v || *v == 0 || *v >= TPROF_PID_ALL) return 2;
      pid = static_cast<uint32_t>(*v);
    } else if (a == "--interval" && has_value) {
      auto v = ParseNumber(a, args[++i]);
      if (!v) return 2;
      interval_ms = *v;
      interval_given = true;
    } else if (a == "--count" && has_value) {
      auto v = ParseNumber(a, args[++i]);
      if (!v || *v == 0) return 2;
      count = *v;
      count_given = true;
    } else {
      std::fprintf(stderr, "tprofctl threads: unexpected '%s'\n\n", a.c_str());
      Usage(stderr);
      return 2;
    }
  }
  auto dev = OpenDeviceOrReport();
  if (!dev) return 1;
  auto st = dev->GetMetricsStatus();
  if (!st) return ReportError(st.error());
  if (!st->enabled) {
    std::fprintf(stderr, "tprofctl: per-thread metrics are off: turn them on with "
                         "`tprofctl metrics on`\n");
    return 1;
  }
  if (top) {
    if (json) {
      std::fprintf(stderr, "tprofctl threads: --top is a table; --json goes without it\n");
      return 2;
    }
    return RunThreadsTop(*dev, st->metrics, pid, interval_given ? std::max<uint64_t>(interval_ms, 10) : 1000,
                         count_given ? count : 0, batch);
  }
  for (uint64_t n = 0; n < count; ++n) {
    if (interval_ms) std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
    auto r = dev->DrainAll(pid);
    if (!r) return ReportError(r.error());
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

}  // namespace tprof::cli
