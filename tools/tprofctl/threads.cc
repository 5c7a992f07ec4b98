// tprofctl threads: drain and print per-thread metric deltas.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <thread>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "commands.h"
#include "tprof/json_format.h"

namespace tprof::cli {

namespace {

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: tprofctl threads [--pid PID | --all] [--interval MS] [--count N] [--json]\n\n"
               "Drains the per-thread metric deltas: every thread whose metrics moved\n"
               "since the last drain (or read), once, then zeroes them. Threads that\n"
               "exited in between are shown once more, marked exited.\n"
               "  --all          every process (default; needs CAP_PERFMON/CAP_SYS_ADMIN)\n"
               "  --pid PID      one process (yours, or with ptrace-read rights over it)\n"
               "  --interval MS  wait MS milliseconds before each drain (default: drain now)\n"
               "  --count N      drains to print with --interval (default 1)\n"
               "  --json         one JSON object per thread per line\n"
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

}  // namespace

int RunThreads(const Args& args) {
  uint32_t pid = TPROF_PID_ALL;
  uint64_t interval_ms = 0, count = 1;
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool has_value = i + 1 < args.size();
    if (a == "-h" || a == "--help") {
      Usage(stdout);
      return 0;
    } else if (a == "--json") {
      json = true;
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
    } else if (a == "--count" && has_value) {
      auto v = ParseNumber(a, args[++i]);
      if (!v || *v == 0) return 2;
      count = *v;
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
