// Foundation benchmarks, run inside one guest boot by bench/run.sh:
//   1. the cost of TPROF_IOC_GET_INFO against a trivial syscall (getppid);
//   2. the cost of the scheduler hooks: a pipe ping-pong between two
//      processes (two context switches per round trip) with tprof.ko loaded
//      and unloaded, alternated several times in the same boot.
// Results are ratios against a baseline measured in the same boot: TCG
// timings are only comparable side by side.
#include <fcntl.h>
#include <linux/tprof.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double NsPerOp(Clock::duration d, long ops) {
  return std::chrono::duration<double, std::nano>(d).count() / double(ops);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double GetppidNs(long n) {
  auto t0 = Clock::now();
  for (long i = 0; i < n; ++i) ::syscall(SYS_getppid);
  return NsPerOp(Clock::now() - t0, n);
}

double GetInfoNs(int fd, long n) {
  auto t0 = Clock::now();
  for (long i = 0; i < n; ++i) {
    tprof_info info{};
    if (::ioctl(fd, TPROF_IOC_GET_INFO, &info) != 0) {
      std::perror("TPROF_IOC_GET_INFO");
      std::exit(1);
    }
  }
  return NsPerOp(Clock::now() - t0, n);
}

// Round-trip time of one byte between two processes over two pipes.
double PingPongNs(long rounds) {
  int to_child[2], to_parent[2];
  if (::pipe(to_child) || ::pipe(to_parent)) std::exit(1);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(to_child[1]);  // else read() never sees EOF and the child never exits
    ::close(to_parent[0]);
    char c;
    while (::read(to_child[0], &c, 1) == 1)
      if (::write(to_parent[1], &c, 1) != 1) break;
    ::_exit(0);
  }
  ::close(to_child[0]);
  ::close(to_parent[1]);
  char c = 'x';
  auto t0 = Clock::now();
  for (long i = 0; i < rounds; ++i) {
    if (::write(to_child[1], &c, 1) != 1 || ::read(to_parent[0], &c, 1) != 1) std::exit(1);
  }
  auto d = Clock::now() - t0;
  ::close(to_child[1]);
  ::close(to_parent[0]);
  ::waitpid(pid, nullptr, 0);
  return NsPerOp(d, rounds);
}

bool SetModuleLoaded(bool loaded, const char* path) {
  if (!loaded) return ::syscall(SYS_delete_module, "tprof", O_NONBLOCK) == 0;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::syscall(SYS_finit_module, fd, "", 0) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

int main() {
  const char* module = std::getenv("TPROF_MODULE_PATH");
  if (!module || !*module) {
    std::fprintf(stderr, "TPROF_MODULE_PATH not set: run through bench/run.sh\n");
    return 1;
  }
  constexpr long kCalls = 100000, kRounds = 20000;
  constexpr int kRepeats = 5;

  int fd = ::open(TPROF_DEVICE_PATH, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    std::perror(TPROF_DEVICE_PATH);
    return 1;
  }
  std::vector<double> syscall_ns, ioctl_ns;
  for (int r = 0; r < kRepeats; ++r) {
    syscall_ns.push_back(GetppidNs(kCalls));
    ioctl_ns.push_back(GetInfoNs(fd, kCalls));
  }
  ::close(fd);

  std::vector<double> loaded_ns, unloaded_ns;
  for (int r = 0; r < kRepeats; ++r) {
    loaded_ns.push_back(PingPongNs(kRounds));
    if (!SetModuleLoaded(false, module)) return std::perror("rmmod tprof"), 1;
    unloaded_ns.push_back(PingPongNs(kRounds));
    if (!SetModuleLoaded(true, module)) return std::perror("insmod tprof"), 1;
  }

  double sys = Median(syscall_ns), ioc = Median(ioctl_ns);
  double on = Median(loaded_ns), off = Median(unloaded_ns);
  std::printf("%-44s %10s %10s %8s\n", "benchmark (median of 5, same boot)", "tprof", "baseline",
              "ratio");
  std::printf("%-44s %8.0fns %8.0fns %7.2fx\n", "GET_INFO ioctl vs getppid()", ioc, sys, ioc / sys);
  std::printf("%-44s %8.0fns %8.0fns %7.2fx\n", "pipe ping-pong, module loaded vs unloaded", on,
              off, on / off);
  return 0;
}
