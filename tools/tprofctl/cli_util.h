// Small helpers shared by tprofctl subcommands.
#ifndef TPROF_TOOLS_TPROFCTL_CLI_UTIL_H_
#define TPROF_TOOLS_TPROFCTL_CLI_UTIL_H_

#include <cstdio>
#include <optional>
#include <string>

#include "hints.h"
#include "tprof/device/device.h"

namespace tprof::cli {

// Prints the library's error and, on a second line, what to do about it
// (hints.h). Returns 1, the failure status.
inline int ReportError(const Error& error, Doing doing = Doing::kOther) {
  std::fprintf(stderr, "tprofctl: %s\n", error.message().c_str());
  if (std::string hint = Hint(error, doing); !hint.empty())
    std::fprintf(stderr, "tprofctl: %s\n", hint.c_str());
  return 1;
}

// Opens /dev/tprof, reporting a failure.
inline std::optional<Device> OpenDeviceOrReport(Doing doing = Doing::kOpenDevice) {
  auto dev = Device::Open();
  if (!dev) {
    ReportError(dev.error(), doing);
    return std::nullopt;
  }
  return std::move(dev).value();
}

}  // namespace tprof::cli

#endif  // TPROF_TOOLS_TPROFCTL_CLI_UTIL_H_
