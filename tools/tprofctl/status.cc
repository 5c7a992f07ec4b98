// tprofctl status: what the module is and what it has counted.
#include <sys/utsname.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "commands.h"
#include "tprof/device/device.h"
#include "tprof/output/json_format.h"

namespace tprof::cli {

namespace {

std::string KernelRelease() {
  utsname u{};
  return ::uname(&u) == 0 ? u.release : "unknown";
}

// The sampling session (whoever owns it) and, while it runs, its rate
// over a short interval.
struct SamplingView {
  SamplingStatus status;
  std::optional<double> samples_per_second;
  double rate_seconds = 0;
};

Expected<SamplingView> ReadSampling(const Device& dev, uint64_t rate_ms) {
  auto first = dev.GetSamplingStatus();
  if (!first) return first.error();
  SamplingView v{*first, std::nullopt, 0};
  if (!first->running || rate_ms == 0) return v;
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(rate_ms));
  auto second = dev.GetSamplingStatus();
  if (!second) return second.error();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (second->running && second->samples_taken >= first->samples_taken && s > 0) {
    v.samples_per_second = static_cast<double>(second->samples_taken - first->samples_taken) / s;
    v.rate_seconds = s;
  }
  v.status = *second;
  return v;
}

std::string SessionTarget(const SamplingStatus& s) {
  return s.pid == TPROF_PID_ALL ? "every process" : "process " + std::to_string(s.pid);
}

nlohmann::ordered_json Counters(const tprof_counters& c) {
  return {{"context_switches", c.context_switches},
          {"forks", c.forks},
          {"execs", c.execs},
          {"exits", c.exits},
          {"frees", c.frees}};
}

void PrintJson(const Info& info, const SamplingView& sampling) {
  nlohmann::ordered_json j = {{"format_version", kJsonFormatVersion},
                              {"abi_version", info.AbiVersionString()},
                              {"abi_major", info.abi_major},
                              {"abi_minor", info.abi_minor},
                              {"module_version", info.ModuleVersionString()},
                              {"kernel_release", KernelRelease()},
                              {"ncpus", info.nr_cpu_ids},
                              {"online_cpus", info.nr_online_cpus},
                              {"state", info.StateName()},
                              {"features", info.FeatureNames()},
                              {"total", Counters(info.total)}};
  const SamplingStatus& s = sampling.status;
  nlohmann::ordered_json session = {{"active", s.active}, {"running", s.running}};
  if (s.active) {
    session["pid"] = s.pid == TPROF_PID_ALL ? std::string("all") : std::to_string(s.pid);
    session["frequency_hz"] = s.frequency_hz;
    session["samples_taken"] = s.samples_taken;
    session["lost_samples"] = s.lost_samples;
    session["lost_records"] = s.lost_records;
    if (sampling.samples_per_second)
      session["samples_per_second"] = static_cast<uint64_t>(*sampling.samples_per_second + 0.5);
  }
  j["sampling"] = std::move(session);
  nlohmann::ordered_json cpus = nlohmann::ordered_json::array();
  for (const CpuStats& cpu : info.cpus) {
    nlohmann::ordered_json row = {{"cpu", cpu.cpu}, {"online", cpu.online}};
    row.update(Counters(cpu.counters));
    cpus.push_back(std::move(row));
  }
  j["cpus"] = std::move(cpus);
  std::printf("%s\n", j.dump().c_str());
}

void PrintCounterRow(const char* label, const tprof_counters& c) {
  std::printf("%-8s %16" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n", label,
              static_cast<uint64_t>(c.context_switches), static_cast<uint64_t>(c.forks),
              static_cast<uint64_t>(c.execs), static_cast<uint64_t>(c.exits));
}

void PrintText(const Info& info, const SamplingView& sampling) {
  std::string features;
  for (const std::string& f : info.FeatureNames()) features += (features.empty() ? "" : ", ") + f;
  std::printf("tprof %s (ABI %s) on Linux %s\n", info.ModuleVersionString().c_str(),
              info.AbiVersionString().c_str(), KernelRelease().c_str());
  std::printf("state:    %s\n", info.StateName().c_str());
  std::printf("cpus:     %u online, %u possible\n", info.nr_online_cpus, info.nr_cpu_ids);
  std::printf("features: %s\n", features.empty() ? "none" : features.c_str());
  const SamplingStatus& s = sampling.status;
  if (!s.active) {
    std::printf("sampling: no session\n\n");
  } else {
    std::printf("sampling: %s, %s, %u Hz: %" PRIu64 " samples taken, %" PRIu64
                " lost (%.2f%%), %" PRIu64 " records lost",
                s.running ? "running" : "stopped", SessionTarget(s).c_str(), s.frequency_hz,
                s.samples_taken, s.lost_samples,
                s.samples_taken ? 100.0 * static_cast<double>(s.lost_samples) /
                                      static_cast<double>(s.samples_taken)
                                : 0.0,
                s.lost_records);
    if (sampling.samples_per_second)
      std::printf("; %.0f samples/s over %.1f s", *sampling.samples_per_second,
                  sampling.rate_seconds);
    std::printf("\n\n");
  }
  std::printf("%-8s %16s %12s %12s %12s\n", "", "ctx-switches", "forks", "execs", "exits");
  for (const CpuStats& cpu : info.cpus) {
    std::string label = "cpu" + std::to_string(cpu.cpu) + (cpu.online ? "" : "*");
    PrintCounterRow(label.c_str(), cpu.counters);
  }
  PrintCounterRow("total", info.total);
  std::printf("\ncounted since the module was loaded; * = CPU offline\n");
}

struct StatusOptions {
  bool json = false;
  uint64_t rate_ms = 1000;
};

int RunStatus(const StatusOptions& o) {
  const bool json = o.json;
  const uint64_t rate_ms = o.rate_ms;
  auto dev = OpenDeviceOrReport();
  if (!dev) return 1;
  auto info = dev->GetInfo();
  if (!info) return ReportError(info.error(), Doing::kOpenDevice);
  auto sampling = ReadSampling(*dev, rate_ms);
  if (!sampling) return ReportError(sampling.error(), Doing::kOpenDevice);
  if (json)
    PrintJson(*info, *sampling);
  else
    PrintText(*info, *sampling);
  return 0;
}

}  // namespace

void AddStatusCommand(CommandLine& cli) {
  auto o = std::make_shared<StatusOptions>();
  CLI::App* sub = cli.Add(cli.app(), "status",
                          "Shows the module's version, state, event counters and sampling "
                          "session. It prints the tprof module's ABI and module version, the "
                          "kernel, the CPUs, the module state and, per CPU and in total, the "
                          "context switches, forks, execs and exits it has counted since it was "
                          "loaded, and the sampling session (whoever runs it): its samples, "
                          "losses and, while it runs, its rate.",
                          [o] { return RunStatus(*o); });
  sub->add_flag("--json", o->json, "one JSON object instead of text");
  sub->add_option("--rate-ms", o->rate_ms,
                  "measure the sampling rate over MS ms (default 1000; 0: no rate)")
      ->transform(Decimal())
      ->check(CLI::Range(uint64_t{0}, uint64_t{60000}));
}

}  // namespace tprof::cli
