// Small helpers shared by tprofctl subcommands.
#ifndef TPROF_TOOLS_TPROFCTL_CLI_UTIL_H_
#define TPROF_TOOLS_TPROFCTL_CLI_UTIL_H_

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <initializer_list>
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

// Holds stop signals (Ctrl-C and the like) blocked from before a command
// attaches until its signal_set is waiting for them: one sent in between
// stays pending and reaches the set. Unblocked it would be lost, ignored
// in a shell's background job or ending the process with nothing printed.
class HeldStopSignals {
 public:
  explicit HeldStopSignals(std::initializer_list<int> signals) {
    sigemptyset(&set_);
    for (int sig : signals) sigaddset(&set_, sig);
    ::pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  }
  ~HeldStopSignals() { Release(); }
  HeldStopSignals(const HeldStopSignals&) = delete;
  HeldStopSignals& operator=(const HeldStopSignals&) = delete;

  // Call once the signal_set holds the signals.
  void Release() {
    if (held_) ::pthread_sigmask(SIG_UNBLOCK, &set_, nullptr);
    held_ = false;
  }

 private:
  sigset_t set_;
  bool held_ = true;
};

}  // namespace tprof::cli

#endif  // TPROF_TOOLS_TPROFCTL_CLI_UTIL_H_
