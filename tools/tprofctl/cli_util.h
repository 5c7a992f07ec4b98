// Small helpers shared by tprofctl subcommands.
#ifndef TPROF_TOOLS_TPROFCTL_CLI_UTIL_H_
#define TPROF_TOOLS_TPROFCTL_CLI_UTIL_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "tprof/device.h"

namespace tprof::cli {

// Opens /dev/tprof, printing the library's message on failure.
inline std::optional<Device> OpenDeviceOrReport() {
  auto dev = Device::Open();
  if (!dev) {
    std::fprintf(stderr, "tprofctl: %s\n", dev.error().message().c_str());
    return std::nullopt;
  }
  return std::move(dev).value();
}

inline int ReportError(const Error& error) {
  std::fprintf(stderr, "tprofctl: %s\n", error.message().c_str());
  return 1;
}

// Parses a decimal number for option `name`; prints a usage error if bad.
inline std::optional<uint64_t> ParseNumber(const std::string& name, const std::string& text) {
  try {
    size_t end = 0;
    uint64_t v = std::stoull(text, &end, 10);
    if (end == text.size() && text[0] != '-') return v;
  } catch (...) {
  }
  std::fprintf(stderr, "tprofctl: %s needs a number, got '%s'\n", name.c_str(), text.c_str());
  return std::nullopt;
}

}  // namespace tprof::cli

#endif  // TPROF_TOOLS_TPROFCTL_CLI_UTIL_H_
