// tprofctl status: what the module is and what it has counted.
#include <sys/utsname.h>

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "tprof/device.h"
#include "tprof/json_writer.h"

namespace tprof::cli {

namespace {

std::string KernelRelease() {
  utsname u{};
  return ::uname(&u) == 0 ? u.release : "unknown";
}

void WriteCounters(JsonWriter& w, const tprof_counters& c) {
  w.Field("context_switches", c.context_switches)
      .Field("forks", c.forks)
      .Field("execs", c.execs)
      .Field("exits", c.exits)
      .Field("frees", c.frees);
}

void PrintJson(const Info& info) {
  JsonWriter w;
  w.BeginObject()
      .Field("abi_version", info.AbiVersionString())
      .Field("abi_major", info.abi_major)
      .Field("abi_minor", info.abi_minor)
      .Field("module_version", info.ModuleVersionString())
      .Field("kernel_release", KernelRelease())
      .Field("ncpus", info.nr_cpu_ids)
      .Field("online_cpus", info.nr_online_cpus)
      .Field("state", info.StateName());
  w.Key("features").BeginArray();
  for (const std::string& f : info.FeatureNames()) w.String(f);
  w.EndArray();
  w.Key("total").BeginObject();
  WriteCounters(w, info.total);
  w.EndObject();
  w.Key("cpus").BeginArray();
  for (const CpuStats& cpu : info.cpus) {
    w.BeginObject().Field("cpu", cpu.cpu).Field("online", cpu.online);
    WriteCounters(w, cpu.counters);
    w.EndObject();
  }
  w.EndArray().EndObject();
  std::printf("%s\n", w.str().c_str());
}

void PrintCounterRow(const char* label, const tprof_counters& c) {
  std::printf("%-8s %16" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n", label,
              static_cast<uint64_t>(c.context_switches), static_cast<uint64_t>(c.forks),
              static_cast<uint64_t>(c.execs), static_cast<uint64_t>(c.exits));
}

void PrintText(const Info& info) {
  std::string features;
  for (const std::string& f : info.FeatureNames()) features += (features.empty() ? "" : ", ") + f;
  std::printf("tprof %s (ABI %s) on Linux %s\n", info.ModuleVersionString().c_str(),
              info.AbiVersionString().c_str(), KernelRelease().c_str());
  std::printf("state:    %s\n", info.StateName().c_str());
  std::printf("cpus:     %u online, %u possible\n", info.nr_online_cpus, info.nr_cpu_ids);
  std::printf("features: %s\n\n", features.empty() ? "none" : features.c_str());
  std::printf("%-8s %16s %12s %12s %12s\n", "", "ctx-switches", "forks", "execs", "exits");
  for (const CpuStats& cpu : info.cpus) {
    std::string label = "cpu" + std::to_string(cpu.cpu) + (cpu.online ? "" : "*");
    PrintCounterRow(label.c_str(), cpu.counters);
  }
  PrintCounterRow("total", info.total);
  std::printf("\ncounted since the module was loaded; * = CPU offline\n");
}

int RunStatus(bool json) {
  auto dev = OpenDeviceOrReport();
  if (!dev) return 1;
  auto info = dev->GetInfo();
  if (!info) return ReportError(info.error(), Doing::kOpenDevice);
  if (json)
    PrintJson(*info);
  else
    PrintText(*info);
  return 0;
}

}  // namespace

void AddStatusCommand(CommandLine& cli) {
  auto json = std::make_shared<bool>(false);
  CLI::App* sub = cli.Add(cli.app(), "status",
                          "Shows the module's version, state and event counters. It prints the tprof "
                          "module's ABI and module version, the kernel, the CPUs, "
                          "the module state and, per CPU and in total, the context switches, forks, "
                          "execs and exits it has counted since it was loaded.",
                          [json] { return RunStatus(*json); });
  sub->add_flag("--json", *json, "one JSON object instead of text");
}

}  // namespace tprof::cli
