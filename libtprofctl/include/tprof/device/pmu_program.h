// PMU programs on the device (uapi/linux/tprof.h, "PMU programs"; design:
// docs/pmu-programs.md), from a pmu_spec.h ProgramSpec's Build():
//
//   Program         the program's descriptor (RAII): create, read values
//   Monitor         a libnl generic netlink socket subscribed to programs:
//                   receives their events (fd() fits a Boost.Asio loop)
#ifndef TPROF_PMU_PROGRAM_H_
#define TPROF_PMU_PROGRAM_H_

#include <linux/tprof.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tprof/device/device.h"
#include "tprof/base/expected.h"
#include "tprof/device/pmu_spec.h"
#include "tprof/base/scoped_fd.h"

struct nl_sock;

namespace tprof::pmu {

class Program {
 public:
  [[nodiscard]] static Expected<Program> Create(const Device& device, const tprof_pmu_program& program);
  [[nodiscard]] Expected<tprof_pmu_values> Read() const;
  // A counter's per-subrange values (TPROF_IOC_PMU_READ_SUBRANGES).
  [[nodiscard]] Expected<std::vector<uint64_t>> ReadSubranges(uint32_t counter) const;
  int fd() const { return fd_.get(); }

 private:
  explicit Program(ScopedFd fd) : fd_(std::move(fd)) {}
  ScopedFd fd_;
};

class Monitor {
 public:
  // ENOENT (with how to load the module) when the family is not registered.
  [[nodiscard]] static Expected<Monitor> Open();
  [[nodiscard]] Status Subscribe(const Program& program) { return SubscribeFd(program.fd()); }
  // Any descriptor number of the calling process: the kernel checks it.
  [[nodiscard]] Status SubscribeFd(int program_fd);
  using Callback = std::function<void(const tprof_pmu_event&)>;
  // Every event available now, without blocking; returns how many.
  [[nodiscard]] Expected<size_t> Receive(const Callback& cb);
  // Waits up to `timeout` for events, then Receive(); 0 is not an error.
  [[nodiscard]] Expected<size_t> Wait(std::chrono::milliseconds timeout, const Callback& cb);
  int fd() const;

 private:
  struct SockDeleter {
    void operator()(nl_sock* s) const;
  };
  Monitor(std::unique_ptr<nl_sock, SockDeleter> sock, int family)
      : sock_(std::move(sock)), family_(family) {}
  std::unique_ptr<nl_sock, SockDeleter> sock_;
  int family_ = 0;
  // Events that arrived while SubscribeFd waited for its ACK (the kernel
  // may send queued events before it): Receive() delivers them first.
  std::vector<tprof_pmu_event> pending_;
};

// "rule 0 (3*ins-cyc<0) fired: ins=... cyc=... pid 12 tid 12 cpu 0 ip 0x..."
std::string FormatEvent(const tprof_pmu_event& e, const ProgramSpec& spec);

}  // namespace tprof::pmu

#endif  // TPROF_PMU_PROGRAM_H_
