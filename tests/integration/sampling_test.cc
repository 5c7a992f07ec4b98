// Sampling sessions against the real module: the double-buffer protocol
// (delivered + lost == taken, exactly), process and address-space records,
// permissions, and the session's lifetime.
#include <fcntl.h>
#include <sched.h>
#include <linux/perf_event.h>
#include <linux/tprof.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "guest_env.h"
#include "tprof/device/sampling.h"

namespace tprof::test {
namespace {


// Burns `ms` of this thread's CPU time (not wall time: slow debug kernels
// and a busy host must not shrink the number of samples it earns).
extern "C" __attribute__((noinline)) void tprof_sampling_test_spin(int ms) {
  uint64_t end = ThreadCpuNs() + uint64_t(ms) * 1'000'000;
  volatile uint64_t x = 0;
  // Long between clock reads (a system call; about 0.5 ms apart under
  // TCG), so the samples land in this loop and not in the clock's code.
  while (ThreadCpuNs() < end)
    for (int i = 0; i < 100000; ++i) x = x + i;
}

struct Collected {
  uint64_t samples = 0, own_samples = 0, own_user = 0, idle = 0, hidden = 0, kernel_ip = 0;
  uint64_t lost_samples_records = 0, lost_records_records = 0;
  std::set<std::string> comms_of_self;
  std::map<std::string, int> map_paths_of_self;
  std::set<uint64_t> own_spaces, own_map_spaces;
  bool own_exe_ip_in_map = false;
  std::vector<tprof_rec_map> own_maps;
  std::vector<uint64_t> own_user_ips;
  std::vector<std::pair<uint64_t, uint64_t>> own_kernel_callers;  // {ip, caller}
};

void CollectOne(const tprof_rec_header* h, Collected* c, uint32_t self);

void Collect(SamplingSession& s, Collected* c) {
  const uint32_t self = getpid();
  auto fn = [&](uint32_t, const tprof_rec_header* h, size_t avail) {
    EXPECT_GE(avail, h->size);
    CollectOne(h, c, self);
    return true;
  };
  auto n = s.Consume(fn);
  ASSERT_TRUE(n) << n.error().message();
}

void CollectOne(const tprof_rec_header* h, Collected* c, uint32_t self) {
  {
    switch (h->type) {
      case TPROF_REC_SAMPLE: {
        auto* r = reinterpret_cast<const tprof_rec_sample*>(h);
        ++c->samples;
        if (r->flags & TPROF_SAMPLE_IDLE) ++c->idle;
        if (r->flags & TPROF_SAMPLE_HIDDEN) ++c->hidden;
        if (!(r->flags & TPROF_SAMPLE_USER) && r->ip) ++c->kernel_ip;
        if (r->pid == self) {
          ++c->own_samples;
          if (r->flags & TPROF_SAMPLE_USER) {
            ++c->own_user;
            c->own_spaces.insert(r->space_id);
            c->own_user_ips.push_back(r->ip);
          } else if (r->flags & TPROF_SAMPLE_CALLER) {
            c->own_kernel_callers.emplace_back(r->ip, r->caller);
          }
        }
        break;
      }
      case TPROF_REC_COMM: {
        auto* r = reinterpret_cast<const tprof_rec_comm*>(h);
        if (r->pid == self) c->comms_of_self.insert(std::string(r->comm, strnlen(r->comm, 16)));
        break;
      }
      case TPROF_REC_MAP: {
        auto* r = reinterpret_cast<const tprof_rec_map*>(h);
        const char* path = reinterpret_cast<const char*>(r + 1);
        size_t max = h->size - sizeof(*r);
        EXPECT_LT(strnlen(path, max), max) << "path not NUL-terminated";
        if (r->pid == self) {
          c->map_paths_of_self[path]++;
          c->own_map_spaces.insert(r->space_id);
          c->own_maps.push_back(*r);
        }
        break;
      }
      case TPROF_REC_LOST: {
        auto* r = reinterpret_cast<const tprof_rec_lost*>(h);
        c->lost_samples_records += r->lost_samples;
        c->lost_records_records += r->lost_records;
        break;
      }
    }
  }
}

void StopAndDrain(SamplingSession& s, Collected* c) {
  ASSERT_TRUE(s.Stop());
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (!s.Finished() && std::chrono::steady_clock::now() < deadline) {
    Collect(s, c);
    ASSERT_TRUE(s.Wait(100));  // returns as soon as records or the hangup come
  }
  ASSERT_TRUE(s.Finished()) << "session never reported POLLHUP";
  EXPECT_EQ(s.malformed_halves(), 0u);
}

SamplingSession StartOrDie(const SamplingOptions& o) {
  auto s = SamplingSession::Start(o);
  if (!s) FailTest(s.error().message());
  return std::move(*s);
}

TEST(SamplingTest, DeliveredPlusLostEqualsTakenAndOwnCodeIsSampled) {
  SamplingOptions o;
  o.frequency_hz = 1000;
  o.callers = true;
  SamplingSession s = StartOrDie(o);
  Collected c;
  for (int i = 0; i < 10; ++i) {
    tprof_sampling_test_spin(30);
    Collect(s, &c);
  }
  StopAndDrain(s, &c);
  CpuBufferTotals t = s.TotalsAll();
  EXPECT_EQ(c.samples + t.lost_samples, t.samples_taken);
  EXPECT_EQ(t.lost_samples, 0u) << "default buffers lost samples at 1 kHz";
  // 300 ms of CPU at 1 kHz is ~300 samples; the lockdep kernel under TCG
  // and a loaded host deliver fewer (perf throttles slow handlers; a
  // descheduled vCPU loses ticks, not CPU time): the check below is
  // relative to what was delivered.
  EXPECT_GT(c.own_user, 0u) << "300 ms of spinning at 1 kHz";
  EXPECT_GT(c.idle, 0u) << "the second CPU idles: wait state must be counted";
  EXPECT_GT(c.kernel_ip, 0u) << "root sees kernel addresses";
  EXPECT_EQ(c.hidden, 0u);
  std::string comm;
  std::getline(std::ifstream("/proc/self/comm"), comm);
  EXPECT_TRUE(c.comms_of_self.count(comm)) << "no COMM record for this process (" << comm << ")";
  // Every user sample's space has its executable mappings recorded, and
  // this test binary's own code is among them.
  for (uint64_t space : c.own_spaces) EXPECT_TRUE(c.own_map_spaces.count(space));
  bool exe_mapped = false;
  char exe[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", exe, sizeof(exe) - 1), 0);
  for (auto& [path, n] : c.map_paths_of_self) exe_mapped |= path == exe;
  EXPECT_TRUE(exe_mapped) << "no MAP record for " << exe;
  auto spin = reinterpret_cast<uint64_t>(&tprof_sampling_test_spin);
  size_t in_exe = 0;
  for (uint64_t ip : c.own_user_ips)
    for (const tprof_rec_map& m : c.own_maps)
      if (ip >= m.start && ip < m.end && ip >= spin - 4096 && ip < spin + 4096) ++in_exe;
  EXPECT_GT(in_exe, c.own_user / 4) << "samples should land near the spinning function";
}

// The kernel's text symbols (/proc/kallsyms, read as root), to name
// kernel addresses.
class KernelSymbols {
 public:
  KernelSymbols() {
    std::ifstream in("/proc/kallsyms");
    std::string addr, type, name;
    while (in >> addr >> type >> name) {
      in.ignore(1 << 20, '\n');  // a module's [name]
      const uint64_t a = std::stoull(addr, nullptr, 16);
      if (name == "_stext") stext_ = a;
      if (name == "_etext") etext_ = a;
      if ((type == "t" || type == "T") && a) text_[a] = name;
    }
  }
  bool InKernelText(uint64_t a) const { return a >= stext_ && a < etext_; }
  std::string Name(uint64_t a) const {
    auto it = text_.upper_bound(a);
    return it == text_.begin() ? "?" : std::prev(it)->second;
  }
  bool ok() const { return stext_ && etext_ > stext_; }

 private:
  uint64_t stext_ = 0, etext_ = 0;
  std::map<uint64_t, std::string> text_;
};

// Kernel callers (--callers): a sample taken in the kernel carries the
// return address of the interrupted function, the step the kernel's own
// unwinder takes first (ORC on x86-64, frame records on arm64, where the
// address may carry a pointer-authentication code to strip). A process
// looping on getppid() spends its kernel time in the syscall path: the
// callers are kernel text, and some of them are its dispatch functions.
TEST(SamplingTest, KernelCallersAreKernelTextOnTheSyscallPath) {
  KernelSymbols syms;
  ASSERT_TRUE(syms.ok()) << "no _stext/_etext in /proc/kallsyms";
  SamplingOptions o;
  o.frequency_hz = 1000;
  o.callers = true;
  o.pid = getpid();
  SamplingSession s = StartOrDie(o);
  Collected c;
  const uint64_t end = ThreadCpuNs() + 300'000'000;  // CPU time, not wall time
  while (ThreadCpuNs() < end)
    for (int i = 0; i < 100; ++i) (void)getppid();
  StopAndDrain(s, &c);
  ASSERT_GT(c.own_kernel_callers.size(), 10u) << "kernel samples with a caller of 300 ms in syscalls";
  size_t in_text = 0, syscall_path = 0;
  std::map<std::string, int> names;
  for (auto [ip, caller] : c.own_kernel_callers) {
    if (!syms.InKernelText(caller)) continue;
    ++in_text;
    const std::string n = syms.Name(caller);
    ++names[syms.Name(ip) + " <- " + n];
    syscall_path += n.find("sys") != std::string::npos || n.find("svc") != std::string::npos;
  }
  std::vector<std::pair<int, std::string>> by_count;
  for (auto& [n, k] : names) by_count.emplace_back(k, n);
  std::sort(by_count.rbegin(), by_count.rend());
  std::string top;
  for (size_t i = 0; i < by_count.size() && i < 8; ++i)
    top += "\n  " + std::to_string(by_count[i].first) + " " + by_count[i].second;
  std::printf("  most frequent kernel ip <- caller:%s\n", top.c_str());
  EXPECT_GE(in_text * 10, c.own_kernel_callers.size() * 9)
      << in_text << " of " << c.own_kernel_callers.size() << " callers in the kernel text:" << top;
  EXPECT_GT(syscall_path, 0u) << "no caller in a syscall dispatch function:" << top;
}

TEST(SamplingTest, TinyBuffersAtHighRateCountEveryLoss) {
  SamplingOptions o;
  o.frequency_hz = 20000;
  o.half_bytes = TPROF_SAMPLING_MIN_HALF_BYTES;
  SamplingSession s = StartOrDie(o);
  tprof_sampling_test_spin(300);  // nobody consumes: both halves fill
  Collected c;
  StopAndDrain(s, &c);
  CpuBufferTotals t = s.TotalsAll();
  EXPECT_GT(t.lost_samples, 0u);
  EXPECT_EQ(c.samples + t.lost_samples, t.samples_taken) << "a sample vanished";
  EXPECT_EQ(c.lost_samples_records, t.lost_samples) << "LOST records disagree with the totals";
}

// A CPU going offline mid-run publishes its partial half and stops
// sampling; coming back, it samples again. Nothing is lost uncounted.
TEST(SamplingTest, CpuHotplugDuringARun) {
  SamplingSession s = StartOrDie(SamplingOptions{});
  Collected c;
  tprof_sampling_test_spin(50);
  ASSERT_TRUE(SetCpuOnline(1, false)) << "cpu1 cannot go offline: kernel without CPU hotplug?";
  Collect(s, &c);
  tprof_buffer_ctl offline_ctl;
  std::memcpy(&offline_ctl, s.map_data() + sizeof(tprof_buffer_ctl), sizeof(offline_ctl));
  EXPECT_EQ(offline_ctl.online, 0u) << "cpu1 still marked as sampling while offline";
  uint64_t taken_offline = s.Totals(1).samples_taken;
  tprof_sampling_test_spin(100);
  EXPECT_EQ(s.Totals(1).samples_taken, taken_offline) << "an offline CPU took samples";
  ASSERT_TRUE(SetCpuOnline(1, true));
  // Keep cpu1 busy so it is sampled again after coming back.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(1, &one);
    sched_setaffinity(0, sizeof(one), &one);
    tprof_sampling_test_spin(100);
    _exit(0);
  }
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_GT(s.Totals(1).samples_taken, taken_offline) << "cpu1 did not sample after coming back";
  StopAndDrain(s, &c);
  CpuBufferTotals t = s.TotalsAll();
  EXPECT_EQ(c.samples + t.lost_samples, t.samples_taken);
}

// Runs `ms` of CPU time pinned to `cpu` in a child (and waits for it).
void SpinOn(int cpu, int ms) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0) _exit(2);
    tprof_sampling_test_spin(ms);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// Sampling chosen CPUs (ABI 1.16, record -C): system-wide, the other CPU
// takes no sample at all, however busy; one process (this one, whose
// children inherit its counters) is sampled on the chosen CPU only.
TEST(SamplingTest, ChosenCpusAloneTakeSamples) {
  for (uint32_t pid : {uint32_t{TPROF_PID_ALL}, uint32_t(getpid())}) {
    SCOPED_TRACE(pid == TPROF_PID_ALL ? "every process" : "this process");
    SamplingOptions o;
    o.pid = pid;
    o.cpus = {1};
    SamplingSession s = StartOrDie(o);
    SpinOn(0, 200);
    SpinOn(1, 200);
    Collected c;
    StopAndDrain(s, &c);
    EXPECT_EQ(s.Totals(0).samples_taken, 0u) << "CPU 0 was not chosen";
    EXPECT_GT(s.Totals(1).samples_taken, 20u) << "200 ms of CPU 1 at 1 kHz";
    const CpuBufferTotals t = s.TotalsAll();
    EXPECT_EQ(c.samples + t.lost_samples, t.samples_taken);
  }
}

// Touches `pages` fresh anonymous pages: one page fault each.
void FaultPages(int pages) {
  size_t len = size_t(pages) * 4096;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  madvise(p, len, MADV_NOHUGEPAGE);
  for (size_t off = 0; off < len; off += 4096) static_cast<volatile char*>(p)[off] = 1;
  munmap(p, len);
}

// The same with a software event other than cpu-clock: creating or
// releasing a page-faults counter takes cpus_read_lock(), so a counter made
// or released inside the CPU-hotplug callback hung cpuhp/1 (both ways).
// cpu1 goes offline and online; faults on cpu1 are sampled again after.
TEST(SamplingTest, PageFaultSamplingFollowsCpuHotplug) {
  SamplingOptions o;
  ASSERT_TRUE(ParseSampleEvent("page-faults", &o));
  o.event_period = 1;
  SamplingSession s = StartOrDie(o);
  auto faults_on_cpu1 = [] {
    pid_t child = fork();
    if (child == 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(1, &one);
      if (sched_setaffinity(0, sizeof(one), &one)) _exit(1);
      FaultPages(256);
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  };
  ASSERT_TRUE(faults_on_cpu1());
  uint64_t before = s.Totals(1).samples_taken;
  EXPECT_GE(before, 256u) << "cpu1 page faults were not sampled";
  Collected c;
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(SetCpuOnline(1, false)) << "cpu1 cannot go offline: kernel without CPU hotplug?";
    Collect(s, &c);
    tprof_buffer_ctl ctl;
    std::memcpy(&ctl, s.map_data() + sizeof(tprof_buffer_ctl), sizeof(ctl));
    EXPECT_EQ(ctl.online, 0u) << "cpu1 still marked as sampling while offline";
    uint64_t offline = s.Totals(1).samples_taken;
    FaultPages(64);  // on cpu0
    EXPECT_EQ(s.Totals(1).samples_taken, offline) << "an offline CPU took samples";
    ASSERT_TRUE(SetCpuOnline(1, true));
    uint64_t back = s.Totals(1).samples_taken;
    ASSERT_TRUE(faults_on_cpu1());
    // 256 faults at period 1: at least as many samples on cpu1.
    EXPECT_GE(s.Totals(1).samples_taken - back, 256u)
        << "cpu1 did not sample page faults after coming back (round " << round << ")";
    Collect(s, &c);
  }
  StopAndDrain(s, &c);
  CpuBufferTotals t = s.TotalsAll();
  EXPECT_EQ(c.samples + t.lost_samples, t.samples_taken);
}

TEST(SamplingTest, OneSessionAtATimeAndOwnerOnly) {
  SamplingSession s = StartOrDie(SamplingOptions{});
  auto second = SamplingSession::Start(SamplingOptions{});
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code().value(), EBUSY);
  Device other = OpenDeviceOrFail();
  EXPECT_EQ(ioctl(other.fd(), TPROF_IOC_SAMPLING_STOP), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(GetInfoOrFail(other).state, TPROF_STATE_SAMPLING);
  tprof_sampling_status st{};
  ASSERT_EQ(ioctl(other.fd(), TPROF_IOC_SAMPLING_STATUS, &st), 0);
  EXPECT_EQ(st.active, 1u);
  EXPECT_EQ(st.running, 1u);
  EXPECT_EQ(st.frequency_hz, 1000u);
  // The mapping is read-only.
  void* w = mmap(nullptr, s.config().map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd(), 0);
  EXPECT_EQ(w, MAP_FAILED);
  Collected c;
  StopAndDrain(s, &c);
}

// SAMPLING_FLUSH (live views): a few samples of this process sit in
// partial halves (64 KiB holds over 1000) until a flush hands them over
// while sampling goes on; nothing is counted twice or lost by it, and only
// the owner may flush.
TEST(SamplingTest, FlushHandsOverPartialHalvesWhileRunning) {
  SamplingOptions o;
  o.pid = static_cast<uint32_t>(::getpid());
  o.half_bytes = 64 * 1024;
  SamplingSession s = StartOrDie(o);
  tprof_sampling_test_spin(30);
  Collected before;
  Collect(s, &before);
  EXPECT_EQ(before.own_samples, 0u) << "a half filled from 30 ms of one thread";
  uint64_t taken = s.TotalsAll().samples_taken;
  ASSERT_GT(taken, 0u) << "no sample of a 30 ms spin";

  Device other = OpenDeviceOrFail();
  EXPECT_EQ(ioctl(other.fd(), TPROF_IOC_SAMPLING_FLUSH), -1);
  EXPECT_EQ(errno, EPERM) << "another descriptor flushed the session";

  ASSERT_TRUE(s.Flush());
  Collected flushed;
  Collect(s, &flushed);
  EXPECT_GE(flushed.own_samples, taken - s.TotalsAll().lost_samples)
      << "the flush did not hand over the samples taken before it";
  EXPECT_EQ(flushed.comms_of_self.size(), 1u) << "the target's name came with them";
  EXPECT_FALSE(flushed.own_map_spaces.empty()) << "its mappings came with them";

  tprof_sampling_test_spin(20);  // sampling goes on into the other half
  Collected rest;
  StopAndDrain(s, &rest);
  CpuBufferTotals t = s.TotalsAll();
  EXPECT_GT(rest.own_samples, 0u);
  EXPECT_EQ(flushed.samples + rest.samples + t.lost_samples, t.samples_taken);
  EXPECT_EQ(ioctl(s.fd(), TPROF_IOC_SAMPLING_FLUSH), 0) << "a stopped session: nothing to do";
}

// Unwind tables (ABI 1.19): the owner loads tables and sends spaces; each
// argument check answers with its documented errno; the session's bounds
// (unwind_table_kb=, TPROF_UNWIND_MAX_SPACES) refuse with EDQUOT.
TEST(SamplingTest, UnwindTablesCheckTheirArgumentsAndBounds) {
  auto load = [](int fd, std::vector<tprof_unwind_row> rows, uint32_t* id = nullptr) {
    tprof_unwind_load l{};
    l.rows = reinterpret_cast<uintptr_t>(rows.data());
    l.nr_rows = static_cast<uint32_t>(rows.size());
    errno = 0;
    int rc = ioctl(fd, TPROF_IOC_UNWIND_LOAD, &l);
    if (id) *id = l.table_id;
    return rc == 0 ? 0 : errno;
  };
  auto space = [](int fd, uint64_t id, std::vector<tprof_unwind_range> ranges) {
    tprof_unwind_space sp{};
    sp.space_id = id;
    sp.ranges = reinterpret_cast<uintptr_t>(ranges.data());
    sp.nr_ranges = static_cast<uint32_t>(ranges.size());
    errno = 0;
    return ioctl(fd, TPROF_IOC_UNWIND_SPACE, &sp) == 0 ? 0 : errno;
  };
  auto row = [](uint32_t start) {
    tprof_unwind_row r{};
    r.start = start;
    r.cfa_base = TPROF_UNWIND_CFA_SP;
    r.cfa_offset = 8;
    return r;
  };
  const std::vector<tprof_unwind_row> good = {row(0), row(16), row(64)};
  {
    Device fresh = OpenDeviceOrFail();
    EXPECT_EQ(load(fresh.fd(), good), ENODATA) << "no session on this descriptor";
    EXPECT_EQ(space(fresh.fd(), 1, {}), ENODATA);
  }
  SamplingOptions o;
  o.pid = static_cast<uint32_t>(::getpid());
  o.stack_depth = 16;
  {
    SamplingSession plain = StartOrDie(o);
    EXPECT_EQ(load(plain.fd(), good), EINVAL) << "a session without TPROF_SAMPLING_USER_CFI";
  }
  o.unwind_tables = true;
  SamplingSession s = StartOrDie(o);
  Device other = OpenDeviceOrFail();
  EXPECT_EQ(load(other.fd(), good), EPERM) << "another descriptor loaded into the session";
  EXPECT_EQ(space(other.fd(), 1, {}), EPERM);

  uint32_t id1 = 0, id2 = 0;
  ASSERT_EQ(load(s.fd(), good, &id1), 0);
  ASSERT_EQ(load(s.fd(), good, &id2), 0);
  EXPECT_GE(id1, 1u);
  EXPECT_NE(id1, id2);
  EXPECT_EQ(load(s.fd(), {}), EINVAL) << "no rows";
  EXPECT_EQ(load(s.fd(), {row(16), row(16)}), EINVAL) << "rows not increasing";
  EXPECT_EQ(load(s.fd(), {row(16), row(0)}), EINVAL) << "rows not sorted";
  for (int field = 0; field < 4; ++field) {
    std::vector<tprof_unwind_row> bad = good;
    switch (field) {
      case 0: bad[1].cfa_base = TPROF_UNWIND_CFA_MAX + 1; break;
      case 1: bad[1].fp_rule = TPROF_UNWIND_FP_MAX + 1; break;
      case 2: bad[1].ra_rule = TPROF_UNWIND_RA_MAX + 1; break;
      default: bad[1].reserved = 1; break;
    }
    EXPECT_EQ(load(s.fd(), bad), EINVAL) << "a bad row, field " << field;
  }
  {
    tprof_unwind_load l{};
    l.rows = 16;  // unmapped
    l.nr_rows = 4;
    EXPECT_EQ(ioctl(s.fd(), TPROF_IOC_UNWIND_LOAD, &l), -1);
    EXPECT_EQ(errno, EFAULT);
    l.rows = reinterpret_cast<uintptr_t>(good.data());
    l.nr_rows = TPROF_UNWIND_MAX_ROWS + 1;
    EXPECT_EQ(ioctl(s.fd(), TPROF_IOC_UNWIND_LOAD, &l), -1);
    EXPECT_EQ(errno, EINVAL);
    l.nr_rows = 3;
    l.resv[1] = 1;
    EXPECT_EQ(ioctl(s.fd(), TPROF_IOC_UNWIND_LOAD, &l), -1);
    EXPECT_EQ(errno, EINVAL);
  }

  auto range = [](uint64_t start, uint64_t end, uint32_t table) {
    tprof_unwind_range r{};
    r.start = start;
    r.end = end;
    r.bias = start;
    r.table_id = table;
    return r;
  };
  EXPECT_EQ(space(s.fd(), 7, {range(0x1000, 0x2000, id1), range(0x2000, 0x3000, id2)}), 0);
  EXPECT_EQ(space(s.fd(), 7, {range(0x1000, 0x2000, id2)}), 0) << "replaced whole";
  // A table goes with its last user: id1 with the replacement, id2 with the space.
  EXPECT_EQ(space(s.fd(), 8, {range(0x1000, 0x2000, id1)}), EINVAL) << "a table without users";
  EXPECT_EQ(space(s.fd(), 7, {}), 0) << "forgotten";
  EXPECT_EQ(space(s.fd(), 8, {range(0x1000, 0x2000, id2)}), EINVAL) << "a table without users";
  EXPECT_EQ(space(s.fd(), 7, {}), 0) << "forgetting an unknown space is not an error";
  ASSERT_EQ(load(s.fd(), good, &id1), 0) << "loaded again";
  EXPECT_EQ(space(s.fd(), 7, {range(0x1000, 0x2000, 999)}), EINVAL) << "an unknown table";
  EXPECT_EQ(space(s.fd(), 7, {range(0x1000, 0x2001, id1), range(0x2000, 0x3000, id1)}), EINVAL)
      << "overlapping ranges";
  EXPECT_EQ(space(s.fd(), 7, {range(0x2000, 0x3000, id1), range(0x1000, 0x1800, id1)}), EINVAL)
      << "unsorted ranges";
  EXPECT_EQ(space(s.fd(), 7, {range(0x2000, 0x2000, id1)}), EINVAL) << "an empty range";
  {
    std::vector<tprof_unwind_range> many(TPROF_UNWIND_MAX_RANGES + 1);
    for (size_t i = 0; i < many.size(); i++) many[i] = range(0x1000 * (i + 1), 0x1000 * (i + 2), id1);
    EXPECT_EQ(space(s.fd(), 7, many), EINVAL) << "more than TPROF_UNWIND_MAX_RANGES";
    many.pop_back();
    EXPECT_EQ(space(s.fd(), 7, many), 0) << "TPROF_UNWIND_MAX_RANGES";
    tprof_unwind_space sp{};
    sp.space_id = 8;
    sp.nr_ranges = 1;
    sp.ranges = 16;
    EXPECT_EQ(ioctl(s.fd(), TPROF_IOC_UNWIND_SPACE, &sp), -1);
    EXPECT_EQ(errno, EFAULT);
    sp.ranges = reinterpret_cast<uintptr_t>(many.data());
    sp.resv2 = 1;
    EXPECT_EQ(ioctl(s.fd(), TPROF_IOC_UNWIND_SPACE, &sp), -1);
    EXPECT_EQ(errno, EINVAL);
  }
  // At most TPROF_UNWIND_MAX_SPACES spaces (7 holds one).
  int err = 0;
  uint64_t sent = 1;
  for (uint64_t id = 100; id < 100 + TPROF_UNWIND_MAX_SPACES && !err; id++, sent++)
    err = space(s.fd(), id, {range(0x1000, 0x2000, id1)});
  EXPECT_EQ(err, EDQUOT) << "space " << sent;
  EXPECT_EQ(sent, uint64_t{TPROF_UNWIND_MAX_SPACES} + 1) << "refused before the bound";
  EXPECT_EQ(space(s.fd(), 100, {range(0x1000, 0x3000, id1)}), 0) << "a known space is replaced";
  // unwind_table_kb=: the session's bytes of tables and ranges.
  {
    const char* param = "/sys/module/tprof/parameters/unwind_table_kb";
    std::string old;
    std::ifstream(param) >> old;
    ASSERT_FALSE(old.empty()) << param;
    std::ofstream(param) << "1";
    std::vector<tprof_unwind_row> big;
    for (uint32_t i = 0; i < 128; i++) big.push_back(row(i * 16));  // 2 KiB
    EXPECT_EQ(load(s.fd(), big), EDQUOT);
    std::ofstream(param) << old;
    EXPECT_EQ(load(s.fd(), big), 0) << "the bound restored";
  }
  Collected c;
  StopAndDrain(s, &c);
}

// Function-call interrupts (IPIs) every CPU took so far: /proc/interrupts'
// CAL line (x86), or its "Function call interrupts" IPI line (arm64: IPI1).
uint64_t CallFunctionInterrupts() {
  std::ifstream in("/proc/interrupts");
  std::string line;
  while (std::getline(in, line)) {
    size_t p = line.find_first_not_of(' ');
    if (p == std::string::npos) continue;
    if (line.compare(p, 4, "CAL:") != 0 &&
        line.find("Function call interrupts") == std::string::npos)
      continue;
    size_t colon = line.find(':', p);
    if (colon == std::string::npos) continue;
    uint64_t sum = 0;
    const char* c = line.c_str() + colon + 1;
    char* end = nullptr;
    for (;;) {
      unsigned long long v = std::strtoull(c, &end, 10);
      if (end == c) break;
      sum += v;
      c = end;
    }
    return sum;
  }
  return 0;
}

// Security item 8: each FLUSH interrupts every online CPU, and a tight loop
// of them sent as many cross-CPU calls as it could make system calls. A
// session now gets at most one round per TPROF_SAMPLING_FLUSH_INTERVAL_MS;
// a FLUSH sooner waits for it.
TEST(SamplingTest, FlushLoopIsRateLimitedInCrossCpuCalls) {
  long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  ASSERT_GE(cpus, 2) << "no other CPU to interrupt: the test cannot tell";
  SamplingOptions o;
  o.pid = static_cast<uint32_t>(::getpid());
  SamplingSession s = StartOrDie(o);
  uint64_t cal0 = CallFunctionInterrupts();
  ASSERT_GT(cal0, 0u) << "no CAL line in /proc/interrupts";
  auto t0 = std::chrono::steady_clock::now();
  uint64_t calls = 0;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(300)) {
    ASSERT_EQ(ioctl(s.fd(), TPROF_IOC_SAMPLING_FLUSH), 0) << std::strerror(errno);
    calls++;
  }
  uint64_t ms = uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - t0)
                             .count());
  uint64_t cal = CallFunctionInterrupts() - cal0;
  uint64_t rounds = ms / TPROF_SAMPLING_FLUSH_INTERVAL_MS + 1;
  EXPECT_LE(calls, rounds) << calls << " flush rounds in " << ms << " ms";
  // One call per other CPU a round, plus the guest's own background.
  EXPECT_LE(cal, rounds * uint64_t(cpus - 1) + 100) << cal << " cross-CPU calls in " << ms << " ms";
  Collected rest;
  StopAndDrain(s, &rest);
}

TEST(SamplingTest, FlushWithoutASessionIsENODATA) {
  Device dev = OpenDeviceOrFail();
  EXPECT_EQ(ioctl(dev.fd(), TPROF_IOC_SAMPLING_FLUSH), -1);
  EXPECT_EQ(errno, ENODATA);
}

TEST(SamplingTest, StartStopStartAndCloseWithoutStop) {
  for (int round = 0; round < 3; ++round) {
    SamplingSession s = StartOrDie(SamplingOptions{});
    tprof_sampling_test_spin(20);
    if (round == 1) continue;  // destroyed running: the close ends it
    Collected c;
    StopAndDrain(s, &c);
    EXPECT_GT(c.samples, 0u);
  }
  EXPECT_EQ(GetInfoOrFail(OpenDeviceOrFail()).state, TPROF_STATE_IDLE);
}

TEST(SamplingTest, BadConfigurationsAreRefused) {
  Device dev = OpenDeviceOrFail();
  auto start = [&](tprof_sampling_config c) {
    return ioctl(dev.fd(), TPROF_IOC_SAMPLING_START, &c) == 0 ? 0 : errno;
  };
  tprof_sampling_config c{};
  c.pid = TPROF_PID_ALL;
  c.frequency_hz = TPROF_SAMPLING_MAX_HZ + 1;
  EXPECT_EQ(start(c), EINVAL);
  c = {};
  c.pid = TPROF_PID_ALL;
  c.half_bytes = 5000;
  EXPECT_EQ(start(c), EINVAL);
  c = {};
  c.pid = TPROF_PID_ALL;
  c.flags = 0x80;
  EXPECT_EQ(start(c), EINVAL);
  c = {};
  c.pid = TPROF_PID_ALL;
  c.resv[0] = 1;
  EXPECT_EQ(start(c), EINVAL);
  c = {};
  c.pid = TPROF_PID_ALL;
  c.__pad3 = 1;
  EXPECT_EQ(start(c), EINVAL);
  c = {};
  c.pid = TPROF_PID_ALL;
  c.aggregate_slots = 1024;  // without TPROF_SAMPLING_AGGREGATE
  EXPECT_EQ(start(c), EINVAL);
  c = {};
  c.pid = TPROF_PID_ALL;
  c.flags = TPROF_SAMPLING_AGGREGATE | TPROF_SAMPLING_STACKS | TPROF_SAMPLING_USER_STACK;
  c.stack_depth = 8;
  c.user_stack_bytes = 256;  // stacks are counted (ABI 1.22), copies are not
  EXPECT_EQ(start(c), EINVAL);
  c.flags = TPROF_SAMPLING_AGGREGATE | TPROF_SAMPLING_CALLERS;
  c.stack_depth = 0;
  c.user_stack_bytes = 0;
  EXPECT_EQ(start(c), EINVAL);
  c.flags = TPROF_SAMPLING_AGGREGATE;
  c.aggregate_slots = 1000;  // not a power of two
  EXPECT_EQ(start(c), EINVAL);
  c.aggregate_slots = TPROF_AGGREGATE_MAX_SLOTS * 2;
  EXPECT_EQ(start(c), EINVAL);
  c.flags = TPROF_SAMPLING_AGGREGATE_RECORDS;
  c.aggregate_slots = 0;
  EXPECT_EQ(start(c), EINVAL);
  c = {};
  c.pid = TPROF_PID_ALL;
  c.event_type = TPROF_METRIC_SOFTWARE;  // no period
  EXPECT_EQ(start(c), EINVAL);
  c = {};
  c.pid = TPROF_PID_ALL;
  c.event_type = TPROF_METRIC_HARDWARE;
  c.event_config = PERF_COUNT_HW_CPU_CYCLES;
  c.event_period = 100000;
  if (HasHardwarePmu()) {
    // The arm64 guests: the PMU samples (on its own descriptor, so the
    // refusals below see no session).
    Device hw = OpenDeviceOrFail();
    EXPECT_EQ(ioctl(hw.fd(), TPROF_IOC_SAMPLING_START, &c), 0) << strerror(errno);
  } else {
    EXPECT_EQ(start(c), EOPNOTSUPP) << "QEMU's x86 TCG has no PMU";
  }
  // Stacks (ABI 1.8): a depth in 1..TPROF_MAX_STACK_DEPTH with the flag, none without.
  for (uint32_t depth : {0u, uint32_t{TPROF_MAX_STACK_DEPTH} + 1}) {
    c = {};
    c.pid = TPROF_PID_ALL;
    c.flags = TPROF_SAMPLING_STACKS;
    c.stack_depth = depth;
    EXPECT_EQ(start(c), EINVAL) << "stack_depth " << depth;
  }
  c = {};
  c.pid = TPROF_PID_ALL;
  c.stack_depth = 8;
  EXPECT_EQ(start(c), EINVAL) << "stack_depth without TPROF_SAMPLING_STACKS";
  // Chosen CPUs (ABI 1.16): a bitmap of 8-byte words up to the maximum,
  // naming a possible CPU, at a readable address.
  uint64_t words[TPROF_SAMPLING_MAX_CPUS_BYTES / 8 + 1] = {1};
  struct CpusCase {
    uint64_t cpus;
    uint32_t bytes;
    int err;
    const char* why;
  };
  const uint64_t at = reinterpret_cast<uintptr_t>(words);
  for (const CpusCase& k : {
           CpusCase{at, 0, EINVAL, "an address without a size"},
           CpusCase{0, 8, EINVAL, "a size without an address"},
           CpusCase{at, 4, EINVAL, "not whole words"},
           CpusCase{at, TPROF_SAMPLING_MAX_CPUS_BYTES + 8, EINVAL, "past the maximum"},
           CpusCase{8, 8, EFAULT, "an unreadable bitmap"},
       }) {
    c = {};
    c.pid = TPROF_PID_ALL;
    c.cpus = k.cpus;
    c.cpus_bytes = k.bytes;
    EXPECT_EQ(start(c), k.err) << k.why;
  }
  words[0] = 0;
  words[TPROF_SAMPLING_MAX_CPUS_BYTES / 8 - 1] = uint64_t{1} << 63;  // CPU 8191: not possible here
  c = {};
  c.pid = TPROF_PID_ALL;
  c.cpus = at;
  c.cpus_bytes = TPROF_SAMPLING_MAX_CPUS_BYTES;
  EXPECT_EQ(start(c), EINVAL) << "a bitmap naming no possible CPU";
  // User stack copies: with STACKS, 8-aligned, within a quarter of a half.
  const struct {
    uint32_t flags, bytes, half;
    int err;
    const char* why;
  } user_stacks[] = {
      {0, 8, 0, EINVAL, "user_stack_bytes without USER_STACK"},
      {TPROF_SAMPLING_USER_STACK, 8, 0, EINVAL, "USER_STACK without STACKS"},
      {TPROF_SAMPLING_USER_STACK | TPROF_SAMPLING_STACKS, 0, 0, EINVAL, "no bytes"},
      {TPROF_SAMPLING_USER_STACK | TPROF_SAMPLING_STACKS, 12, 0, EINVAL, "not 8-aligned"},
      {TPROF_SAMPLING_USER_STACK | TPROF_SAMPLING_STACKS, TPROF_MAX_USER_STACK_BYTES + 8,
       TPROF_SAMPLING_MAX_HALF_BYTES, EINVAL, "above the maximum"},
      {TPROF_SAMPLING_USER_STACK | TPROF_SAMPLING_STACKS, 2048, 4096, EINVAL,
       "above a quarter of the half"},
  };
  for (const auto& k : user_stacks) {
    c = {};
    c.pid = TPROF_PID_ALL;
    c.flags = k.flags;
    c.stack_depth = (k.flags & TPROF_SAMPLING_STACKS) ? 8 : 0;
    c.user_stack_bytes = k.bytes;
    c.half_bytes = k.half;
    EXPECT_EQ(start(c), k.err) << k.why;
  }
  c = {};
  c.pid = 999999;
  EXPECT_EQ(start(c), ESRCH);
  EXPECT_EQ(ioctl(dev.fd(), TPROF_IOC_SAMPLING_STOP), -1);
  EXPECT_EQ(errno, ENODATA);
  tprof_buffer_release rel{};
  EXPECT_EQ(ioctl(dev.fd(), TPROF_IOC_SAMPLING_RELEASE, &rel), -1);
  EXPECT_EQ(errno, ENODATA);
  EXPECT_EQ(ioctl(dev.fd(), TPROF_IOC_SAMPLING_START, nullptr), -1);
  EXPECT_EQ(errno, EFAULT);
}

// Spins `levels` calls deep, each level with its frame (no tail call).
extern "C" __attribute__((noinline)) void tprof_sampling_test_spin_deep(int levels, int ms) {
  if (levels == 0)
    tprof_sampling_test_spin(ms);
  else
    tprof_sampling_test_spin_deep(levels - 1, ms);
  asm volatile("" ::: "memory");
}

// Stack records (ABI 1.8) as the header describes them: the frames fill
// hdr.size exactly, a user-mode sample has no kernel part, a kernel-mode
// one starts its user part with a user address, and the depth bounds the
// kernel and frame-chain entries: spinning 8 frames deep, the walks end
// there (the test's own code has frame pointers; gtest's may not).
TEST(SamplingTest, StackRecordsFillTheirSizeAndStopAtTheDepth) {
  constexpr uint32_t kDepth = 5;
  SamplingOptions o;
  o.frequency_hz = 1000;
  o.pid = getpid();
  o.stack_depth = kDepth;
  SamplingSession s = StartOrDie(o);
  uint64_t user = 0, kernel = 0, truncated = 0, bad = 0, no_stack = 0;
  std::string why;
  auto fn = [&](uint32_t, const tprof_rec_header* h, size_t) {
    if (h->type != TPROF_REC_SAMPLE) return true;
    auto* r = reinterpret_cast<const tprof_rec_sample*>(h);
    if (!(r->flags & TPROF_SAMPLE_STACK)) {
      ++no_stack;
      return true;
    }
    auto* st = reinterpret_cast<const tprof_rec_stack*>(r + 1);
    const auto* frames = reinterpret_cast<const uint64_t*>(st + 1);
    const size_t n = size_t{st->nr_kernel} + st->nr_user;
    const size_t extra = ((st->flags & TPROF_STACK_USER_IP) ? 1 : 0) +
                         ((st->flags & TPROF_STACK_LEAF_RA) ? 1 : 0);
    auto fail = [&](const std::string& what) {
      if (bad++ == 0) why = what;
    };
    if (h->size != sizeof(*r) + sizeof(*st) + 8 * n) fail("size does not match the frames");
    if (n > kDepth + extra || st->nr_user < extra) fail("more frames than the depth");
    if (r->flags & TPROF_SAMPLE_USER) {
      ++user;
      if (st->nr_kernel || (st->flags & TPROF_STACK_USER_IP)) fail("kernel part in a user sample");
      if (st->flags & TPROF_STACK_TRUNCATED) {
        ++truncated;
        if (n - extra != kDepth) fail("truncated before the depth");
      }
    } else if (r->pid == static_cast<uint32_t>(getpid())) {
      ++kernel;
      // Below the top of a 48-bit user space (arm64 maps libraries just
      // under it); kernel addresses are far above.
      if ((st->flags & TPROF_STACK_USER_IP) && frames[st->nr_kernel] >= (1ull << 48))
        fail("the user ip is not a user address");
    }
    return true;
  };
  // Spins until the session has delivered the user samples the share
  // below needs: a loaded host or the debug kernel delivers fewer per
  // millisecond of CPU, never none.
  constexpr uint64_t kWant = 100;
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (user < kWant && std::chrono::steady_clock::now() < deadline) {
    tprof_sampling_test_spin_deep(8, 30);
    auto n = s.Consume(fn);
    ASSERT_TRUE(n) << n.error().message();
  }
  ASSERT_TRUE(s.Stop());
  while (!s.Finished() && std::chrono::steady_clock::now() < deadline + kPatience) {
    auto n = s.Consume(fn);
    ASSERT_TRUE(n) << n.error().message();
    ASSERT_TRUE(s.Wait(100));
  }
  EXPECT_TRUE(s.Finished()) << "session never reported POLLHUP";
  EXPECT_EQ(bad, 0u) << why;
  EXPECT_EQ(no_stack, 0u) << "every sample of a stack session carries a stack";
  ASSERT_GE(user, kWant) << "user samples of spinning 8 frames deep at 1 kHz";
  EXPECT_GE(truncated * 10, user * 9) << truncated << " of " << user << " stacks reached the depth";
}

// perf lowers its sample-rate limit when handlers run long (TCG's do) and
// then stops the counter until the next tick: no throttling while a test
// counts samples. The rate first: the kernel refuses to change it (EINVAL)
// while perf_cpu_time_max_percent is 0.
class NoPerfThrottling {
 public:
  bool ok() const { return rate_.ok() && no_lowering_.ok(); }

 private:
  ScopedFileValue rate_{"/proc/sys/kernel/perf_event_max_sample_rate", "100000"};
  ScopedFileValue no_lowering_{"/proc/sys/kernel/perf_cpu_time_max_percent", "0"};
};

// Samples this process took while running `body`, on `event` every `period`.
struct KnownLoopSamples {
  uint64_t in_loop = 0, own = 0;
};
KnownLoopSamples SampleKnownLoop(const char* event, uint64_t period, const std::function<void()>& body) {
  KnownLoopSamples r;
  SamplingOptions o;
  EXPECT_TRUE(ParseSampleEvent(event, &o)) << event;
  o.event_period = period;
  o.pid = getpid();
  auto started = SamplingSession::Start(o);
  EXPECT_TRUE(started) << event << ": " << started.error().message()
                       << " (QEMU's arm64 CPU counts instructions only with -icount: tools/tprof-vm --icount)";
  if (!started) return r;
  SamplingSession s = std::move(*started);
  body();
  Collected c;
  StopAndDrain(s, &c);
  const auto loop = reinterpret_cast<uint64_t>(&tprof_known_loop);
  for (uint64_t ip : c.own_user_ips) r.in_loop += ip >= loop && ip < loop + 64;
  r.own = c.own_samples;
  return r;
}

// Hardware-event sampling. With a PMU (the arm64 guests), one sample every
// `period` events: a loop of a known length gets exactly length / period of
// them, give or take two (where the count stands when the loop starts, and
// an overflow taken just after it ends). Without one (x86 TCG), "not
// available".
TEST(SamplingTest, InstructionSamplesOfAKnownLoopMatchItsLength) {
  NoPerfThrottling no_throttling;
  ASSERT_TRUE(no_throttling.ok()) << "cannot set perf_event_max_sample_rate / perf_cpu_time_max_percent";
  if (!HasHardwarePmu()) {
    SamplingOptions o;
    ASSERT_TRUE(ParseSampleEvent("instructions", &o));
    o.event_period = 100'000;
    o.pid = getpid();
    auto started = SamplingSession::Start(o);
    ASSERT_FALSE(started) << "instruction sampling on a machine without PMU?";
    EXPECT_EQ(started.error().code().value(), EOPNOTSUPP);
    return;
  }
  constexpr uint64_t kPeriod = 100'000;
  constexpr uint64_t kN = 10'000'000;  // 20 million instructions: 200 samples
  const uint64_t want = 2 * kN / kPeriod;

  // instructions: QEMU 7.2 notices an event counter's overflow only when
  // the CPU changes exception level (its timer path works for the cycle
  // counter alone), so the loop enters the kernel every half period; those
  // syscalls add under 2,500 instructions each (10 samples in all), and
  // the samples land where the overflow is noticed: any of this process's.
  constexpr int kChunks = 400;
  KnownLoopSamples instr = SampleKnownLoop("instructions", kPeriod, [&] {
    for (int i = 0; i < kChunks; ++i) {
      tprof_known_loop(kN / kChunks);
      (void)getppid();
    }
  });
  EXPECT_GE(instr.own + 2, want) << "instructions: samples missing";
  EXPECT_LE(instr.own, want + 2 + kChunks * 2'500 / kPeriod) << "instructions: more samples than instructions";
  std::printf("  instructions: %llu samples for %llu loop instructions at period %llu\n",
              static_cast<unsigned long long>(instr.own), static_cast<unsigned long long>(2 * kN),
              static_cast<unsigned long long>(kPeriod));

  // cycles under -icount (cycles = 2^S x instructions): every overflow is
  // taken inside the loop, at its address.
  const int shift = IcountShift();
  if (shift < 0) return;  // a real CPU: cycles are not known in advance
  KnownLoopSamples cycles = SampleKnownLoop("cycles", kPeriod, [&] { tprof_known_loop(kN); });
  const uint64_t want_cycles = want << shift;
  EXPECT_GE(cycles.in_loop + 2, want_cycles) << "cycles: " << cycles.own << " samples of this process";
  EXPECT_LE(cycles.in_loop, want_cycles + 2) << "cycles: " << cycles.own << " samples of this process";
  std::printf("  cycles: %llu samples in a loop of %llu instructions at period %llu\n",
              static_cast<unsigned long long>(cycles.in_loop), static_cast<unsigned long long>(2 * kN),
              static_cast<unsigned long long>(kPeriod));
#if defined(__aarch64__)
  // The same through a raw PMUv3 event: r11 is CPU_CYCLES.
  KnownLoopSamples raw = SampleKnownLoop("r11", kPeriod, [&] { tprof_known_loop(kN); });
  EXPECT_GE(raw.in_loop + 2, want_cycles) << "r11: " << raw.own << " samples of this process";
  EXPECT_LE(raw.in_loop, want_cycles + 2) << "r11: " << raw.own << " samples of this process";
#endif
}

TEST(SamplingTest, SoftwareEventOverflowSamples) {
  SamplingOptions o;
  ASSERT_TRUE(ParseSampleEvent("page-faults", &o));
  o.event_period = 1;
  o.pid = getpid();
  SamplingSession s = StartOrDie(o);
  for (int i = 0; i < 64; ++i) {
    void* p = mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    memset(p, 1, 1 << 16);
    munmap(p, 1 << 16);
  }
  Collected c;
  StopAndDrain(s, &c);
  EXPECT_GE(c.own_samples, 64u * 16) << "one sample per page fault";
  EXPECT_EQ(c.samples, c.own_samples) << "--pid sampled another process";
}

// An unprivileged process may sample itself (kernel addresses withheld)
// but not the whole machine.
TEST(SamplingTest, UnprivilegedSamplesItselfOnly) {
  ScopedParanoid paranoid(1);  // kernel samples allowed, their addresses withheld
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)) _exit(10);
    if (SamplingSession::Start(SamplingOptions{}).ok()) _exit(11);
    SamplingOptions o;
    o.pid = 1;
    auto other = SamplingSession::Start(o);
    if (other.ok() || other.error().code().value() != EACCES) _exit(12);
    o.pid = 0;  // itself
    auto s = SamplingSession::Start(o);
    if (!s) _exit(13);
    const uint64_t end = ThreadCpuNs() + 200'000'000;  // CPU time, not wall time
    while (ThreadCpuNs() < end) getppid();               // kernel time
    if (!s->Stop()) _exit(14);
    uint64_t kernel_with_ip = 0, samples = 0;
    for (int i = 0; i < 1000 && !s->Finished(); ++i) {
      auto n = s->Consume([&](uint32_t, const tprof_rec_header* h, size_t) {
        if (h->type != TPROF_REC_SAMPLE) return true;
        auto* r = reinterpret_cast<const tprof_rec_sample*>(h);
        ++samples;
        if (!(r->flags & TPROF_SAMPLE_USER) && (r->ip || r->caller)) ++kernel_with_ip;
        return true;
      });
      if (!n) _exit(15);
      (void)s->Wait(10);
    }
    if (samples == 0) _exit(16);
    _exit(kernel_with_ip == 0 ? 0 : 17);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see the _exit codes in the child";
}

}  // namespace
}  // namespace tprof::test
