// A command forked and held before its exec, so that tprofctl attaches to
// its pid first and observes it from its first instruction (record's
// sampling, stat's counters). Until its exec the child is tprofctl's code,
// named "tprofctl-exec" (perf's "perf-exec"); a command that cannot run
// brings back exec's errno, so the caller reports it and writes nothing.
#ifndef TPROF_TOOLS_TPROFCTL_HELD_CHILD_H_
#define TPROF_TOOLS_TPROFCTL_HELD_CHILD_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "tprof/base/expected.h"
#include "tprof/base/scoped_fd.h"

namespace tprof::cli {

class HeldChild {
 public:
  // Forks the child, which waits for Release() (argv: the command, non-empty).
  [[nodiscard]] static Expected<HeldChild> Fork(const std::vector<std::string>& argv);
  HeldChild(HeldChild&&) noexcept = default;
  HeldChild& operator=(HeldChild&&) = delete;
  HeldChild(const HeldChild&) = delete;
  // A child never released exits without running the command, reaped here.
  ~HeldChild();

  pid_t pid() const { return pid_; }
  // Lets the child exec the command: 0 once it did, else exec's errno
  // (the child has then exited and been reaped). Once released, reaping
  // the child is the caller's.
  [[nodiscard]] int Release();

 private:
  HeldChild(pid_t pid, ScopedFd go, ScopedFd exec_error)
      : pid_(pid), go_(std::move(go)), exec_error_(std::move(exec_error)) {}

  pid_t pid_ = 0;
  ScopedFd go_;          // closed without a byte: the child exits
  ScopedFd exec_error_;  // EOF at a successful exec (O_CLOEXEC), else its errno
};

}  // namespace tprof::cli

#endif  // TPROF_TOOLS_TPROFCTL_HELD_CHILD_H_
