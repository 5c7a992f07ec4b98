// tprofctl status: what the module is and what it has counted.
#include <sys/utsname.h>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "tprof/device.h"
#include "tprof/json_format.h"

namespace tprof::cli {

namespace {

std::string KernelRelease() {
  utsname u{};
  return ::uname(&u) == 0 ? u.release : "unknown";
}

nlohmann::ordered_json Counters(const tprof_counters& c) {
  return {{"context_switches", c.context_switches},
          {"forks", c.forks},
          {"execs", c.execs},
          {"exits", c.exits},
          {"frees", c.frees}};
}

void PrintJson(const Info& info) {
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

}  // namespace

int RunStatus(const Args& args) {
  bool json = false;
  for (const std::string& a : args) {
    if (a == "--json") {
      json = true;
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: tprofctl status [--json]\n\n"
          "Shows the tprof module's ABI and module version, the kernel, the CPUs,\n"
          "the module state and, per CPU and in total, the context switches,\n"
          "forks, execs and exits it has counted since it was loaded.\n"
          "  --json   one JSON object instead of text\n");
      return 0;
    } else {
      std::fprintf(stderr, "tprofctl status: unknown option '%s' (try --help)\n", a.c_str());
      return 2;
    }
  }
  auto dev = Device::Open();
  if (!dev) {
    std::fprintf(stderr, "tprofctl: %s\n", dev.error().message().c_str());
    return 1;
  }
  auto info = dev->GetInfo();
  if (!info) {
    std::fprintf(stderr, "tprofctl: %s\n", info.error().message().c_str());
    return 1;
  }
  if (json)
    PrintJson(*info);
  else
    PrintText(*info);
  return 0;
}

}  // namespace tprof::cli
