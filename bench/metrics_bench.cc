// Per-thread metrics benchmarks, run in one guest boot by bench/run.sh.
// Every number is compared with a baseline measured in the same boot:
//   1. read-self: the self page (tprof::SelfMeter, no system call), the
//      READ_SELF and THREAD_READ(0) ioctls against clock_gettime(
//      CLOCK_THREAD_CPUTIME_ID), getrusage(RUSAGE_THREAD) and read() of a
//      per-thread perf task-clock fd;
//   2. polling every thread of a process with 100 / 1,000 / 10,000 threads
//      of which 8 are busy: one tprof drain against clock_gettime on every
//      thread's CPU clock and against reading /proc/self/task/*/schedstat;
//   3. a pipe ping-pong between two processes with the module unloaded,
//      loaded and idle, and loaded with time + two software metrics on
//      (also with both processes holding a self page, which adds a stamp
//      at every switch-in).
#include <dirent.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <linux/tprof.h>
#include <pthread.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tprof/device/device.h"
#include "tprof/device/self_meter.h"

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median over `repeats` runs of the per-op cost of `op` run `n` times.
double NsPerOp(long n, int repeats, const std::function<void()>& op) {
  std::vector<double> runs;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = Clock::now();
    for (long i = 0; i < n; ++i) op();
    runs.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n);
  }
  return Median(runs);
}

void Die(const char* what) {
  std::perror(what);
  std::exit(1);
}

void Row(const char* name, double tprof_ns, const char* base_name, double base_ns) {
  std::printf("%-34s %12.0fns  vs %-30s %12.0fns  ratio %7.3fx\n", name, tprof_ns, base_name,
              base_ns, tprof_ns / base_ns);
}

int g_dev = -1;

void Enable(const std::vector<tprof_metric>& metrics) {
  tprof_metrics_config c{};
  c.nr_metrics = uint32_t(metrics.size());
  for (size_t i = 0; i < metrics.size(); ++i) c.metrics[i] = metrics[i];
  if (::ioctl(g_dev, TPROF_IOC_METRICS_ENABLE, &c)) Die("TPROF_IOC_METRICS_ENABLE");
}

// ---- 1. read-self ---------------------------------------------------------

void BenchReadSelf() {
  constexpr long kN = 20000;
  tprof_thread_read rd{};
  double tprof = NsPerOp(kN, 5, [&] {
    rd.tid = 0;
    if (::ioctl(g_dev, TPROF_IOC_THREAD_READ, &rd)) Die("TPROF_IOC_THREAD_READ");
  });
  auto device = tprof::Device::Open();
  if (!device) Die(device.error().message().c_str());
  auto meter = tprof::SelfMeter::Open(*device);
  if (!meter) Die(meter.error().message().c_str());
  uint64_t delta[TPROF_MAX_METRICS];
  double page = NsPerOp(kN, 5, [&] {
    if (!meter->Read(delta)) Die("SelfMeter::Read");
  });
  tprof_self_read self{};
  double lean = NsPerOp(kN, 5, [&] {
    if (::ioctl(g_dev, TPROF_IOC_READ_SELF, &self)) Die("TPROF_IOC_READ_SELF");
  });
  timespec ts;
  double cg = NsPerOp(kN, 5, [&] { ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); });
  rusage ru;
  double gr = NsPerOp(kN, 5, [&] { ::getrusage(RUSAGE_THREAD, &ru); });
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  int pfd = int(::syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (pfd < 0) Die("perf_event_open task-clock");
  uint64_t v;
  double pr = NsPerOp(kN, 5, [&] {
    if (::read(pfd, &v, sizeof(v)) != sizeof(v)) Die("read perf fd");
  });
  ::close(pfd);
  std::printf("\n== read-self (per call, median of 5 x %ld) ==\n", kN);
  Row("tprof self page (SelfMeter::Read)", page, "clock_gettime(THREAD_CPUTIME)", cg);
  Row("tprof THREAD_READ(self)", tprof, "clock_gettime(THREAD_CPUTIME)", cg);
  Row("tprof READ_SELF (lean)", lean, "clock_gettime(THREAD_CPUTIME)", cg);
  Row("tprof self page (SelfMeter::Read)", page, "getrusage(RUSAGE_THREAD)", gr);
  Row("tprof THREAD_READ(self)", tprof, "getrusage(RUSAGE_THREAD)", gr);
  Row("tprof THREAD_READ(self)", tprof, "read(perf task-clock fd)", pr);
}

// ---- 2. polling many threads ------------------------------------------------

struct Pool {
  std::vector<pthread_t> threads;
  std::vector<clockid_t> clocks;
  std::atomic<bool> stop{false};
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
};

void* IdleMain(void* arg) {
  auto* p = static_cast<Pool*>(arg);
  pthread_mutex_lock(&p->mu);
  while (!p->stop) pthread_cond_wait(&p->cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
  return nullptr;
}

void* BusyMain(void* arg) {
  auto* p = static_cast<Pool*>(arg);
  volatile uint64_t x = 0;
  while (!p->stop.load(std::memory_order_relaxed)) x = x + 1;
  return nullptr;
}

void StartPool(Pool& p, int n, int busy) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  for (int i = 0; i < n; ++i) {
    pthread_t t;
    if (pthread_create(&t, &attr, i < busy ? BusyMain : IdleMain, &p)) Die("pthread_create");
    clockid_t c;
    pthread_getcpuclockid(t, &c);
    p.threads.push_back(t);
    p.clocks.push_back(c);
  }
  pthread_attr_destroy(&attr);
}

void StopPool(Pool& p) {
  pthread_mutex_lock(&p.mu);
  p.stop = true;
  pthread_cond_broadcast(&p.cv);
  pthread_mutex_unlock(&p.mu);
  for (pthread_t t : p.threads) pthread_join(t, nullptr);
}

double PollSchedstat() {
  auto t0 = Clock::now();
  DIR* d = ::opendir("/proc/self/task");
  char path[320], buf[128];
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", e->d_name);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      if (::read(fd, buf, sizeof(buf)) < 0) Die("read schedstat");
      ::close(fd);
    }
  }
  ::closedir(d);
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}

void BenchPolling() {
  std::printf("\n== polling every thread of a process, 8 busy (per poll, median of 5) ==\n");
  std::vector<tprof_thread_metrics> records(4096);
  for (int n : {100, 1000, 10000}) {
    Pool pool;
    StartPool(pool, n, 8);
    ::usleep(100000);
    // Every new thread ran once (its start): drain that backlog first, so
    // the polls below see the steady state of 8 busy threads.
    for (int i = 0; i < 100; ++i) {
      tprof_drain req{};
      req.records = uintptr_t(records.data());
      req.capacity = uint32_t(records.size());
      if (::ioctl(g_dev, TPROF_IOC_DRAIN, &req)) Die("TPROF_IOC_DRAIN");
      if (req.remaining == 0) break;
    }
    std::vector<double> drain, cg, ss;
    for (int r = 0; r < 5; ++r) {
      ::usleep(20000);  // let the busy threads accumulate something
      tprof_drain req{};
      req.records = uintptr_t(records.data());
      req.capacity = uint32_t(records.size());
      auto t0 = Clock::now();
      if (::ioctl(g_dev, TPROF_IOC_DRAIN, &req)) Die("TPROF_IOC_DRAIN");
      drain.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
      timespec ts;
      t0 = Clock::now();
      for (clockid_t c : pool.clocks) ::clock_gettime(c, &ts);
      cg.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
      ss.push_back(PollSchedstat());
    }
    StopPool(pool);
    std::string name = "tprof drain, " + std::to_string(n) + " threads";
    Row(name.c_str(), Median(drain), "clock_gettime on every thread", Median(cg));
    Row(name.c_str(), Median(drain), "read every task schedstat", Median(ss));
  }
}

// ---- 3. ping-pong -------------------------------------------------------------

// Both processes share CPU 0: each round trip is two context switches on
// one CPU, without the cross-CPU wake-ups whose cost swamps everything
// else under TCG.
// Maps the calling thread's self page (kept until the process exits).
void MapSelfPage() {
  if (::mmap(nullptr, size_t(::sysconf(_SC_PAGESIZE)), PROT_READ, MAP_SHARED, g_dev,
             TPROF_SELF_PAGE_OFFSET) == MAP_FAILED)
    Die("mmap self page");
}

double PingPongNs(long rounds, bool self_pages = false) {
  cpu_set_t one, all;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  if (::sched_getaffinity(0, sizeof(all), &all) || ::sched_setaffinity(0, sizeof(one), &one))
    Die("sched_setaffinity");
  int to_child[2], to_parent[2];
  if (::pipe(to_child) || ::pipe(to_parent)) Die("pipe");
  pid_t pid = ::fork();
  if (pid == 0) {
    if (self_pages) MapSelfPage();
    ::close(to_child[1]);
    ::close(to_parent[0]);
    char c;
    while (::read(to_child[0], &c, 1) == 1)
      if (::write(to_parent[1], &c, 1) != 1) break;
    ::_exit(0);
  }
  ::close(to_child[0]);
  ::close(to_parent[1]);
  void* parent_page = nullptr;
  if (self_pages) {
    parent_page = ::mmap(nullptr, size_t(::sysconf(_SC_PAGESIZE)), PROT_READ, MAP_SHARED, g_dev,
                         TPROF_SELF_PAGE_OFFSET);
    if (parent_page == MAP_FAILED) Die("mmap self page");
  }
  char c = 'x';
  auto t0 = Clock::now();
  for (long i = 0; i < rounds; ++i)
    if (::write(to_child[1], &c, 1) != 1 || ::read(to_parent[0], &c, 1) != 1) Die("ping-pong");
  double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / rounds;
  ::close(to_child[1]);
  ::close(to_parent[0]);
  ::waitpid(pid, nullptr, 0);
  if (parent_page) ::munmap(parent_page, size_t(::sysconf(_SC_PAGESIZE)));
  ::sched_setaffinity(0, sizeof(all), &all);
  return ns;
}

void SetLoaded(bool loaded, const char* module) {
  if (!loaded) {
    if (g_dev >= 0) ::close(g_dev);
    g_dev = -1;
    if (::syscall(SYS_delete_module, "tprof", O_NONBLOCK)) Die("rmmod tprof");
    return;
  }
  int fd = ::open(module, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::syscall(SYS_finit_module, fd, "", 0)) Die("insmod tprof");
  ::close(fd);
  g_dev = ::open(TPROF_DEVICE_PATH, O_RDWR | O_CLOEXEC);
  if (g_dev < 0) Die(TPROF_DEVICE_PATH);
}

// p-th quantile (0..1) of v, nearest rank.
double Quantile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[size_t(p * double(v.size() - 1) + 0.5)];
}

void BenchPingPong(const char* module) {
  constexpr long kRounds = 4000;
  // TCG timings need many pairs; under tprof-vm --icount one is exact.
  const char* pairs_env = std::getenv("TPROF_BENCH_PAIRS");
  const int kPairs = pairs_env && std::atoi(pairs_env) > 0 ? std::atoi(pairs_env) : 15;
  const tprof_metric kTime{TPROF_METRIC_TIME, 0, 0};
  const tprof_metric kPageFaults{TPROF_METRIC_SOFTWARE, 0, PERF_COUNT_SW_PAGE_FAULTS};
  const tprof_metric kMigrations{TPROF_METRIC_SOFTWARE, 0, PERF_COUNT_SW_CPU_MIGRATIONS};
  const tprof_metric kCtxSwitches{TPROF_METRIC_SOFTWARE, 0, PERF_COUNT_SW_CONTEXT_SWITCHES};
  const tprof_metric kDispatches{TPROF_METRIC_DISPATCHES, 0, 0};
  struct Config {
    const char* name;
    std::vector<tprof_metric> metrics;  // empty: loaded, accounting off
    bool self_pages = false;
    std::vector<double> ns, unloaded_ns, ratios;
  };
  std::vector<Config> configs = {
      {"module loaded, idle", {}},
      {"time only", {kTime}},
      {"time+page-faults+cpu-migrations", {kTime, kPageFaults, kMigrations}},
      {"time+page-faults+ctx-switches", {kTime, kPageFaults, kCtxSwitches}},
      {"time+dispatches+page-faults", {kTime, kDispatches, kPageFaults}},
      {"time+page-faults+ctx-sw, self pages", {kTime, kPageFaults, kCtxSwitches}, true},
  };
  // Every measurement is paired with an unloaded one taken just before it,
  // so drift in the host's speed (TCG) cancels in each pair's ratio.
  for (int r = 0; r < kPairs; ++r) {
    for (Config& c : configs) {
      SetLoaded(false, module);
      double base = PingPongNs(kRounds);
      SetLoaded(true, module);
      if (!c.metrics.empty()) Enable(c.metrics);
      double ns = PingPongNs(kRounds, c.self_pages);
      c.unloaded_ns.push_back(base);
      c.ns.push_back(ns);
      c.ratios.push_back(ns / base);
    }
  }
  std::printf("\n== pipe ping-pong between two processes on one CPU (per round trip; %d pairs"
              " with the module unloaded just before; ratio = median of the pairs' ratios,"
              " [25th..75th percentile]) ==\n",
              kPairs);
  for (Config& c : configs)
    std::printf("%-38s %9.0fns  vs unloaded %9.0fns  ratio %6.3fx  [%5.3f..%5.3f]\n", c.name,
                Median(c.ns), Median(c.unloaded_ns), Median(c.ratios), Quantile(c.ratios, 0.25),
                Quantile(c.ratios, 0.75));
}

}  // namespace

// Sections to run: read-self, polling, ping-pong (default: all).
int main(int argc, char** argv) {
  const char* module = std::getenv("TPROF_MODULE_PATH");
  if (!module || !*module) {
    std::fprintf(stderr, "TPROF_MODULE_PATH not set: run through bench/run.sh\n");
    return 1;
  }
  auto wanted = [&](const char* section) {
    if (argc < 2) return true;
    for (int i = 1; i < argc; ++i)
      if (!std::strcmp(argv[i], section)) return true;
    return false;
  };
  g_dev = ::open(TPROF_DEVICE_PATH, O_RDWR | O_CLOEXEC);
  if (g_dev < 0) Die(TPROF_DEVICE_PATH);
  Enable({{TPROF_METRIC_TIME, 0, 0}, {TPROF_METRIC_DISPATCHES, 0, 0}});
  if (wanted("read-self")) BenchReadSelf();
  if (wanted("polling")) BenchPolling();
  if (wanted("ping-pong")) BenchPingPong(module);
  return 0;
}
