// Counting windows (ABI 1.3) against the real module: address windows over
// a function of this binary, overlapping windows, a kernel window's wait
// state, profil's cells for the documented scales, profil across fork and
// exec, reading while running, and the permission and argument rules.
//
// A window's counts are checked exactly against the session's own sample
// records: the sampled process is a child that sleeps until the windows
// exist and again until the session has stopped, so every one of its
// samples is seen by both.
#include <fcntl.h>
#include <linux/tprof.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "guest_env.h"
#include "tprof/analysis/profile_file.h"
#include "tprof/device/sampling.h"
#include "tprof/device/windows.h"

namespace tprof::test {
namespace {


// Burns `ms` of this thread's CPU time (wall time would shrink the number of
// samples whenever the guest is descheduled).
extern "C" __attribute__((noinline)) void tprof_windows_test_spin(int ms) {
  uint64_t end = ThreadCpuNs() + uint64_t(ms) * 1'000'000;
  volatile uint64_t x = 0;
  // Long stretches between clock reads: the read is a syscall that costs
  // tens of µs under TCG arm64, and its samples fall outside the window.
  while (ThreadCpuNs() < end)
    for (int i = 0; i < 100000; ++i) x = x + i;
}

uint64_t SpinAddr() { return reinterpret_cast<uintptr_t>(&tprof_windows_test_spin); }

SamplingSession StartOrDie(const SamplingOptions& o) {
  auto s = SamplingSession::Start(o);
  if (!s) FailTest(s.error().message());
  return std::move(*s);
}

void AppendSample(std::vector<tprof_rec_sample>& out, const tprof_rec_header* h) {
  if (h->type == TPROF_REC_SAMPLE) out.push_back(*reinterpret_cast<const tprof_rec_sample*>(h));
}

// Stops the session and returns every sample record it delivered after
// `earlier` (those consumed before the stop).
std::vector<tprof_rec_sample> StopAndCollect(SamplingSession& s,
                                             std::vector<tprof_rec_sample> earlier = {}) {
  std::vector<tprof_rec_sample> out = std::move(earlier);
  auto fn = [&](uint32_t, const tprof_rec_header* h, size_t) {
    AppendSample(out, h);
    return true;
  };
  EXPECT_TRUE(s.Stop());
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (!s.Finished() && std::chrono::steady_clock::now() < deadline) {
    EXPECT_TRUE(s.Consume(fn));
    (void)s.Wait(100);  // returns when records or the hangup come
  }
  EXPECT_TRUE(s.Finished());
  EXPECT_EQ(s.TotalsAll().lost_samples, 0u) << "exact comparisons need every sample";
  return out;
}

// Consumes a session's records on a thread of its own while the test runs:
// a system-wide session in a slow (debug) kernel fills its halves long
// before the test stops it (1049 samples lost in the KUnit guest when they
// were read only after the stop), and exact comparisons need them all.
class Drain {
 public:
  explicit Drain(SamplingSession& s) : s_(s), thread_([this] { Run(); }) {}
  ~Drain() { JoinThread(); }
  Drain(const Drain&) = delete;
  Drain& operator=(const Drain&) = delete;

  std::vector<tprof_rec_sample> StopAndCollect() {
    JoinThread();
    return tprof::test::StopAndCollect(s_, std::move(samples_));
  }

 private:
  void Run() {
    while (!done_.load()) {
      (void)s_.Wait(50);
      EXPECT_TRUE(s_.Consume([this](uint32_t, const tprof_rec_header* h, size_t) {
        AppendSample(samples_, h);
        return true;
      }));
    }
  }
  void JoinThread() {
    done_.store(true);
    if (thread_.joinable()) thread_.join();
  }

  SamplingSession& s_;
  std::vector<tprof_rec_sample> samples_;
  std::atomic<bool> done_{false};
  std::thread thread_;  // last: it starts once the members above exist
};

WindowCounts ReadOrFail(int fd, uint32_t id) {
  auto w = ReadWindow(fd, id);
  EXPECT_TRUE(w) << w.error().message();
  return w ? *w : WindowCounts{};
}

// A child that sleeps on a pipe, then runs `body`, reports, and sleeps
// again until released: all its samples fall between the windows' creation
// and the session's stop.
class Child {
 public:
  template <typename F>
  explicit Child(F body) {
    int a[2], b[2], c[2];
    if (pipe(a) || pipe(b) || pipe(c)) FailTest("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
      char ch;
      close(a[1]);
      close(b[0]);
      close(c[1]);  // else the release read never sees EOF
      if (read(a[0], &ch, 1) != 1) _exit(20);
      body();
      if (write(b[1], "d", 1) != 1) _exit(21);
      (void)!read(c[0], &ch, 1);
      _exit(0);
    }
    close(a[0]);
    close(b[1]);
    close(c[0]);
    go_ = a[1];
    done_ = b[0];
    release_ = c[1];
  }
  ~Child() { Release(); }
  pid_t pid() const { return pid_; }
  void Go() { ASSERT_EQ(write(go_, "g", 1), 1); }
  void WaitDone() {
    char ch;
    ASSERT_EQ(read(done_, &ch, 1), 1);
  }
  void Release() {
    if (pid_ <= 0) return;
    close(release_);
    close(go_);
    close(done_);
    int st = 0;
    EXPECT_EQ(waitpid(pid_, &st, 0), pid_);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
    pid_ = 0;
  }

 private:
  pid_t pid_ = 0;
  int go_ = -1, done_ = -1, release_ = -1;
};

// A flag in memory shared with forked children: the test sets it, a
// child's body polls it.
class SharedFlag {
 public:
  SharedFlag()
      : p_(static_cast<int*>(mmap(nullptr, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0))) {
    if (p_ == MAP_FAILED) FailTest("mmap of a shared flag failed");
  }
  ~SharedFlag() { munmap(p_, sizeof(int)); }
  SharedFlag(const SharedFlag&) = delete;
  SharedFlag& operator=(const SharedFlag&) = delete;
  void Set() const { __atomic_store_n(p_, 1, __ATOMIC_RELEASE); }
  bool IsSet() const { return __atomic_load_n(p_, __ATOMIC_ACQUIRE) != 0; }

 private:
  int* p_;
};

struct ChildRun {
  std::vector<tprof_window_add> added;
  std::vector<WindowCounts> mid;    // read while the child ran
  std::vector<WindowCounts> final;  // read after stop
  std::vector<tprof_rec_sample> samples;
};

// Samples `child` alone with the given windows (pid 0 = the child). With
// `mid_read`, also reads the windows while the child runs, once the first
// has counted a sample in range, then sets *mid_read: the child's body
// keeps running until it is set.
ChildRun SampleChild(Child& child, std::vector<tprof_window_add> windows,
                     const SharedFlag* mid_read = nullptr) {
  ChildRun r;
  EXPECT_TRUE(WaitUntilSleeping(child.pid()));
  SamplingOptions o;
  o.pid = child.pid();
  SamplingSession s = StartOrDie(o);
  Drain drain(s);
  for (tprof_window_add& w : windows) {
    if (w.kind != TPROF_WINDOW_KERNEL && w.pid == 0) w.pid = child.pid();
    auto a = AddWindow(s.fd(), w);
    EXPECT_TRUE(a) << a.error().message();
    if (a) r.added.push_back(*a);
  }
  child.Go();
  if (mid_read) {
    (void)WaitFor([&] {
      auto mid = ReadWindows(s.fd());
      EXPECT_TRUE(mid);
      if (!mid) return true;  // stop: failed
      r.mid = *mid;
      return r.mid.empty() || r.mid[0].info.in_range > 0;
    });
    mid_read->Set();
  }
  child.WaitDone();
  EXPECT_TRUE(WaitUntilSleeping(child.pid()));
  r.samples = drain.StopAndCollect();
  auto fin = ReadWindows(s.fd());
  EXPECT_TRUE(fin) << fin.error().message();
  if (fin) r.final = *fin;
  return r;
}

// User-mode samples of `pid` the session delivered. Sample-count floors
// derive from these, never from the CPU time a child burned: under TCG a
// vCPU the host deschedules loses timer ticks but not CPU time, so a loaded
// host (or the debug kernel, where perf throttles its slow handler) delivers
// fewer samples for the same burn, and the window's counts must still match.
uint64_t UserSamplesOf(const std::vector<tprof_rec_sample>& samples, uint32_t pid) {
  uint64_t n = 0;
  for (const tprof_rec_sample& r : samples) n += r.pid == pid && (r.flags & TPROF_SAMPLE_USER);
  return n;
}

// What a window must hold, computed from the records with `index`.
template <typename IndexFn>
void ExpectMatchesRecords(const WindowCounts& w, const std::vector<tprof_rec_sample>& samples,
                          const std::set<uint32_t>& pids, IndexFn index) {
  std::vector<uint32_t> cells(w.info.nr_cells);
  uint64_t in = 0, out = 0;
  for (const tprof_rec_sample& r : samples) {
    if (!pids.count(r.pid)) continue;
    uint64_t i = 0;
    if ((r.flags & TPROF_SAMPLE_USER) && index(r.ip, &i) && i < cells.size()) {
      ++cells[i];
      ++in;
    } else {
      ++out;
    }
  }
  EXPECT_EQ(w.info.in_range, in) << "window " << w.info.id;
  EXPECT_EQ(w.info.out_of_range, out) << "window " << w.info.id;
  EXPECT_EQ(w.cells, cells) << "window " << w.info.id;
}

tprof_window_add ProcessWindow(uint64_t start, uint64_t len, uint32_t block) {
  tprof_window_add a{};
  a.kind = TPROF_WINDOW_PROCESS;
  a.start = start;
  a.length = len;
  a.block_bytes = block;
  return a;
}

tprof_window_add ProfilWindow(uint32_t pid, uint64_t offset, uint32_t scale, uint64_t bufsiz,
                              uint32_t flags = 0) {
  tprof_window_add a{};
  a.kind = TPROF_WINDOW_PROFIL;
  a.pid = pid;
  a.start = offset;
  a.length = bufsiz;
  a.scale = scale;
  a.flags = flags;
  return a;
}

TEST(WindowTest, SpinningFunctionFillsItsBlocksAndReadsWhileRunning) {
  const uint64_t start = SpinAddr() - 256;
  // BurnCpu (guest_env.cc, another object file) is outside the window: its
  // 60 ms are out-of-range samples whatever the clock reads cost.
  const uint64_t burn = reinterpret_cast<uintptr_t>(&BurnCpu);
  ASSERT_TRUE(burn + 4096 < start || burn >= start + 1024 + 4096) << "BurnCpu next to the window";
  SharedFlag mid_read;
  Child child([&mid_read] {
    // 400 ms, and on until the test has read the window while it runs.
    tprof_windows_test_spin(400);
    while (!mid_read.IsSet()) tprof_windows_test_spin(20);
    BurnCpu(std::chrono::milliseconds(60));
  });
  ChildRun r = SampleChild(child, {ProcessWindow(start, 1024, 64)}, &mid_read);
  ASSERT_EQ(r.final.size(), 1u);
  const WindowCounts& w = r.final[0];
  EXPECT_EQ(w.info.nr_cells, 16u);
  EXPECT_EQ(w.info.cell_bytes, 4u);
  EXPECT_EQ(w.info.pid, uint32_t(child.pid()));
  ASSERT_EQ(r.mid.size(), 1u);
  EXPECT_GT(r.mid[0].info.in_range, 0u) << "readable while running";
  EXPECT_LE(r.mid[0].info.in_range, w.info.in_range);
  // The child's user time is the spin function (and the libc side of its
  // clock reads): at least half of its user samples are in the window.
  const uint64_t user = UserSamplesOf(r.samples, uint32_t(child.pid()));
  ASSERT_GT(user, 0u) << "no user-mode sample of a child that spun for 400 ms of CPU";
  EXPECT_GE(w.info.in_range * 2, user) << "of " << user << " user samples of the child";
  // The function starts at block 4; its hot loop is in the next few blocks.
  uint64_t in_fn = 0;
  for (size_t i = 4; i < 8; ++i) in_fn += w.cells[i];
  EXPECT_GE(in_fn * 10, w.info.in_range * 9) << "counts outside the function's blocks";
  EXPECT_EQ(w.info.wait, 0u) << "a one-process session takes no idle samples";
  ExpectMatchesRecords(w, r.samples, {uint32_t(child.pid())}, [&](uint64_t ip, uint64_t* i) {
    if (ip < start || ip >= start + 1024) return false;
    *i = (ip - start) / 64;
    return true;
  });
  EXPECT_GT(w.info.out_of_range, 0u) << "BurnCpu's samples";
}

TEST(WindowTest, OverlappingWindowsCountIndependently) {
  const uint64_t start = SpinAddr() - 256;
  Child child([] { tprof_windows_test_spin(300); });
  ChildRun r = SampleChild(child,
                      {ProcessWindow(start, 1024, 64), ProcessWindow(start, 1024, 128),
                       ProcessWindow(start + 320, 64, 4)});
  ASSERT_EQ(r.final.size(), 3u);
  const WindowCounts &a = r.final[0], &b = r.final[1], &c = r.final[2];
  EXPECT_GT(a.info.in_range, 0u);
  EXPECT_EQ(a.info.in_range, b.info.in_range);
  EXPECT_EQ(a.info.out_of_range, b.info.out_of_range);
  ASSERT_EQ(b.cells.size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(b.cells[i], a.cells[2 * i] + a.cells[2 * i + 1]);
  // c covers block 5 of a only, in 4-byte blocks.
  uint64_t c_sum = 0;
  for (uint32_t v : c.cells) c_sum += v;
  EXPECT_EQ(c_sum, a.cells[5]);
  EXPECT_EQ(c.info.in_range + c.info.out_of_range, a.info.in_range + a.info.out_of_range);
  for (const WindowCounts& w : r.final)
    ExpectMatchesRecords(w, r.samples, {uint32_t(child.pid())}, [&](uint64_t ip, uint64_t* i) {
      if (ip < w.info.start || ip >= w.info.start + w.info.length) return false;
      *i = (ip - w.info.start) / w.info.block_bytes;
      return true;
    });
}

// glibc's profil_count(), written out independently of the module.
bool ProfilCell(const tprof_window_info& w, uint64_t pc, uint64_t* cell) {
  if (pc < w.start || w.scale < 2) return false;
  unsigned __int128 i = w.scale == 2 ? 0 : static_cast<unsigned __int128>((pc - w.start) / 2) * w.scale / 65536;
  if (w.cell_bytes == 4) i /= 2;
  if (i >= w.nr_cells) return false;
  *cell = static_cast<uint64_t>(i);
  return true;
}

TEST(WindowTest, ProfilCellsFollowTheDocumentedScales) {
  const uint64_t off = (SpinAddr() - 256) & ~1ULL;
  Child child([] { tprof_windows_test_spin(300); });
  ChildRun r = SampleChild(child,
                      {ProfilWindow(0, off, 0x10000, 2048), ProfilWindow(0, off, 0x8000, 1024),
                       ProfilWindow(0, off, 0x8000, 1024, TPROF_WINDOW_CELLS32),
                       ProfilWindow(0, off, 2, 2), ProfilWindow(0, off, 1, 64)});
  ASSERT_EQ(r.final.size(), 5u);
  const WindowCounts &s1 = r.final[0], &s2 = r.final[1], &s3 = r.final[2], &s4 = r.final[3],
                     &s5 = r.final[4];
  EXPECT_EQ(s1.info.nr_cells, 1024u);
  EXPECT_EQ(s1.info.cell_bytes, 2u);
  EXPECT_EQ(s3.info.nr_cells, 256u);
  EXPECT_EQ(s3.info.cell_bytes, 4u);
  // Most of the child's user samples (whatever the host's load let through)
  // are in the spin function, which the window covers.
  const uint64_t user = UserSamplesOf(r.samples, uint32_t(child.pid()));
  ASSERT_GT(user, 0u) << "no user-mode sample of a child that spun for 300 ms of CPU";
  EXPECT_GE(s1.info.in_range * 2, user) << "of " << user << " user samples of the child";
  // 0x10000: cell = (pc - off) / 2; 0x8000: (pc - off) / 4; 32-bit cells: / 8.
  for (size_t i = 0; i < 256; ++i) {
    EXPECT_EQ(s2.cells[2 * i] + s2.cells[2 * i + 1], s3.cells[i]);
    EXPECT_EQ(s1.cells[2 * i] + s1.cells[2 * i + 1], s2.cells[i]);
  }
  EXPECT_EQ(s1.info.in_range, s2.info.in_range);
  // 0x0002: everything from offset on in the first cell.
  ASSERT_EQ(s4.cells.size(), 1u);
  EXPECT_EQ(s4.cells[0], s4.info.in_range);
  EXPECT_GE(s4.info.in_range, s1.info.in_range);
  // 1: off.
  EXPECT_TRUE(s5.info.flags & TPROF_WINDOW_OFF);
  EXPECT_EQ(s5.info.in_range + s5.info.out_of_range + s5.info.wait, 0u);
  for (int k = 0; k < 4; ++k)
    ExpectMatchesRecords(r.final[k], r.samples, {uint32_t(child.pid())},
                         [&](uint64_t ip, uint64_t* i) { return ProfilCell(r.final[k].info, ip, i); });
}

// profil survives fork (the child counts into the same histogram) and is
// turned off by exec (for the process that execs).
TEST(WindowTest, ProfilFollowsForkAndStopsAtExec) {
  const uint64_t off = (SpinAddr() - 256) & ~1ULL;
  int forked[2], proceed[2];
  ASSERT_EQ(pipe(forked), 0);
  ASSERT_EQ(pipe(proceed), 0);
  Child child([&] {
    pid_t g = fork();
    if (g == 0) {
      char ch;
      (void)!write(forked[1], "f", 1);
      if (read(proceed[0], &ch, 1) != 1) _exit(30);
      tprof_windows_test_spin(200);
      execl("/bin/sh", "sh", "-c", "i=0; while [ $i -lt 4000 ]; do i=$((i+1)); done", nullptr);
      _exit(31);
    }
    int st = 0;
    if (waitpid(g, &st, 0) != g || !WIFEXITED(st) || WEXITSTATUS(st) != 0) _exit(32);
    tprof_windows_test_spin(100);
  });
  EXPECT_TRUE(WaitUntilSleeping(child.pid()));
  SamplingOptions o;  // system-wide: the children are sampled too
  SamplingSession s = StartOrDie(o);
  Drain drain(s);
  auto a = AddWindow(s.fd(), ProfilWindow(child.pid(), off, 0x10000, 2048));
  ASSERT_TRUE(a) << a.error().message();
  child.Go();
  char ch;
  ASSERT_EQ(read(forked[0], &ch, 1), 1);
  WindowCounts mid = ReadOrFail(s.fd(), 0);
  EXPECT_EQ(mid.info.nr_procs, 2u) << "the child forked after the window is followed";
  ASSERT_EQ(write(proceed[1], "p", 1), 1);
  child.WaitDone();
  WindowCounts after = ReadOrFail(s.fd(), 0);
  EXPECT_EQ(after.info.nr_procs, 1u) << "the exec'd child is no longer followed";
  EXPECT_TRUE(WaitUntilSleeping(child.pid()));
  std::vector<tprof_rec_sample> samples = drain.StopAndCollect();
  WindowCounts w = ReadOrFail(s.fd(), 0);
  // The grandchild's pid: the one other process running our spin function.
  std::set<uint32_t> pids = {uint32_t(child.pid())};
  uint64_t grandchild_in = 0, all_outside = 0;
  for (const tprof_rec_sample& r : samples) {
    uint64_t i;
    if (r.pid != uint32_t(child.pid()) && r.pid != uint32_t(getpid()) &&
        (r.flags & TPROF_SAMPLE_USER) && ProfilCell(w.info, r.ip, &i)) {
      pids.insert(r.pid);
      ++grandchild_in;
    }
  }
  ASSERT_EQ(pids.size(), 2u) << "one grandchild ran the spin function";
  // (how many depends on the host's load: the counts are checked exactly
  // against the records below)
  EXPECT_GT(grandchild_in, 0u);
  for (const tprof_rec_sample& r : samples) {
    uint64_t i;
    if (pids.count(r.pid) && !((r.flags & TPROF_SAMPLE_USER) && ProfilCell(w.info, r.ip, &i)))
      ++all_outside;
  }
  // Every in-range sample of both is counted; the exec'd shell's are not.
  uint64_t in = 0;
  for (uint32_t v : w.cells) in += v;
  EXPECT_EQ(in, w.info.in_range);
  uint64_t expect_in = 0;
  for (const tprof_rec_sample& r : samples) {
    uint64_t i;
    if (pids.count(r.pid) && (r.flags & TPROF_SAMPLE_USER) && ProfilCell(w.info, r.ip, &i))
      ++expect_in;
  }
  EXPECT_EQ(w.info.in_range, expect_in);
  EXPECT_LT(w.info.out_of_range, all_outside)
      << "the shell's samples after exec must not count (" << w.info.out_of_range << " vs "
      << all_outside << ")";
  close(forked[0]);
  close(forked[1]);
  close(proceed[0]);
  close(proceed[1]);
}

// Where a 2 GiB window over the kernel's text starts: x86-64's kernel
// image lives in the top 2 GiB; arm64's (KASLR) from _stext, rounded down
// to the window's 2 MiB blocks.
uint64_t KernelTextWindowStart() {
#if defined(__aarch64__)
  std::ifstream in("/proc/kallsyms");
  std::string addr, type, name;
  while (in >> addr >> type >> name) {
    if (name == "_stext") return std::stoull(addr, nullptr, 16) & ~((uint64_t(1) << 21) - 1);
    in.ignore(1 << 20, '\n');
  }
  ADD_FAILURE() << "no _stext in /proc/kallsyms";
  return 0;
#else
  return 0xffffffff80000000ULL;
#endif
}

// A process window follows its process by identity, never by number: one
// added for a process that has already exited (a zombie, admitted, whose
// exit hook has run) never counts the next process given its pid, and
// names no pid once that process is gone. The module before identities
// counted every sample of the newcomer.
TEST(WindowTest, AWindowOfAnExitedProcessNeverCountsTheNextOneWithItsPid) {
  pid_t gone = fork();
  ASSERT_GE(gone, 0);
  if (gone == 0) _exit(0);
  ASSERT_TRUE(WaitFor([gone] { return ProcState(gone) == 'Z'; })) << "the child never became a zombie";
  SamplingSession s = StartOrDie(SamplingOptions{});
  Drain drain(s);
  tprof_window_add w = ProcessWindow(SpinAddr() - 256, 1024, 64);
  w.pid = uint32_t(gone);
  auto added = AddWindow(s.fd(), w);
  ASSERT_TRUE(added) << added.error().message();
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);
  {
    std::ofstream last_pid("/proc/sys/kernel/ns_last_pid");
    last_pid << gone - 1 << std::flush;
    ASSERT_TRUE(last_pid) << "/proc/sys/kernel/ns_last_pid not writable";
  }
  // The newcomer runs this binary's spin function, inside the window.
  Child next([] { tprof_windows_test_spin(200); });
  ASSERT_EQ(next.pid(), gone) << "the pid was not reused";
  next.Go();
  next.WaitDone();
  EXPECT_TRUE(WaitUntilSleeping(next.pid()));
  std::vector<tprof_rec_sample> samples = drain.StopAndCollect();
  ASSERT_GT(UserSamplesOf(samples, uint32_t(gone)), 0u) << "the newcomer ran unsampled";
  WindowCounts c = ReadOrFail(s.fd(), added->id);
  EXPECT_EQ(c.info.in_range + c.info.out_of_range, 0u)
      << "the window counted the process that got its process's pid";
  EXPECT_EQ(c.info.pid, 0u) << "the window's process is gone";
}

TEST(WindowTest, KernelWindowCountsWaitStateOnAnIdleGuest) {
  SamplingSession s = StartOrDie(SamplingOptions{});
  tprof_window_add k{};
  k.kind = TPROF_WINDOW_KERNEL;
  k.start = KernelTextWindowStart();
  k.length = 0x80000000ULL;
  k.block_bytes = 1u << 21;
  auto a = AddWindow(s.fd(), k);
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->nr_cells, 1024u);
  // Samples taken until now may predate the window: a flush hands them
  // over, so every idle sample that comes after is one the window counts.
  // (Counting from the session's start, a slow guest, arm64 sid under TCG,
  // took 38 of 69 idle samples before the window was added.)
  uint64_t samples_before = 0, idle_before = 0;
  ASSERT_TRUE(s.Flush());
  ASSERT_TRUE(s.Consume([&](uint32_t, const tprof_rec_header* h, size_t) {
    if (h->type != TPROF_REC_SAMPLE) return true;
    ++samples_before;
    idle_before += (reinterpret_cast<const tprof_rec_sample*>(h)->flags & TPROF_SAMPLE_IDLE) ? 1 : 0;
    return true;
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const uint64_t end = ThreadCpuNs() + 100'000'000;  // CPU time, not wall time
  while (ThreadCpuNs() < end) getppid();
  std::vector<tprof_rec_sample> samples = StopAndCollect(s);
  WindowCounts w = ReadOrFail(s.fd(), 0);
  uint64_t idle = 0, sum = 0;
  for (const tprof_rec_sample& r : samples) idle += (r.flags & TPROF_SAMPLE_IDLE) ? 1 : 0;
  for (uint32_t v : w.cells) sum += v;
  ASSERT_GT(idle, 0u) << "an idle guest waits most of the time";
  EXPECT_GE(w.info.wait, idle) << "the window missed idle samples taken after it was added";
  EXPECT_LE(w.info.wait, idle + idle_before);
  EXPECT_GT(w.info.in_range, 0u) << "getppid() runs in the kernel text";
  EXPECT_EQ(sum, w.info.in_range);
  EXPECT_LE(w.info.in_range + w.info.out_of_range + w.info.wait, samples.size() + samples_before);
}

TEST(WindowTest, OwnerOnlyArgumentsAndLimits) {
  Device other = OpenDeviceOrFail();
  tprof_window_add add = ProcessWindow(SpinAddr(), 4096, 64);
  auto ioctl_errno = [](int fd, unsigned long cmd, void* arg) {
    return ioctl(fd, cmd, arg) == 0 ? 0 : errno;
  };
  EXPECT_EQ(ioctl_errno(other.fd(), TPROF_IOC_WINDOW_ADD, &add), ENODATA) << "no session";
  SamplingOptions o;
  o.pid = getpid();
  SamplingSession s = StartOrDie(o);
  tprof_window_add a = add;
  EXPECT_EQ(ioctl_errno(other.fd(), TPROF_IOC_WINDOW_ADD, &a), EPERM) << "not the owner";
  tprof_window_read rd{};
  EXPECT_EQ(ioctl_errno(other.fd(), TPROF_IOC_WINDOW_READ, &rd), EPERM);
  tprof_window_list l{};
  EXPECT_EQ(ioctl_errno(other.fd(), TPROF_IOC_WINDOW_LIST, &l), EPERM);
  // Bad arguments.
  a = add;
  a.block_bytes = 48;
  EXPECT_EQ(ioctl_errno(s.fd(), TPROF_IOC_WINDOW_ADD, &a), EINVAL);
  a = add;
  a.resv[0] = 1;
  EXPECT_EQ(ioctl_errno(s.fd(), TPROF_IOC_WINDOW_ADD, &a), EINVAL);
  a = ProfilWindow(0, 0x1000, 0x10001, 64);
  EXPECT_EQ(ioctl_errno(s.fd(), TPROF_IOC_WINDOW_ADD, &a), EINVAL);
  a = add;
  a.pid = 999999;
  EXPECT_EQ(ioctl_errno(s.fd(), TPROF_IOC_WINDOW_ADD, &a), ESRCH);
  EXPECT_EQ(ioctl_errno(s.fd(), TPROF_IOC_WINDOW_ADD, nullptr), EFAULT);
  // The cell budget, then the window count.
  a = ProcessWindow(0x10000, uint64_t(TPROF_WINDOW_MAX_CELLS) * 4, 4);
  EXPECT_EQ(ioctl_errno(s.fd(), TPROF_IOC_WINDOW_ADD, &a), 0);
  EXPECT_EQ(a.id, 0u);
  EXPECT_EQ(a.nr_cells, uint64_t(TPROF_WINDOW_MAX_CELLS));
  a = add;
  EXPECT_EQ(ioctl_errno(s.fd(), TPROF_IOC_WINDOW_ADD, &a), ENOMEM);
  a = ProfilWindow(0, SpinAddr(), 0x8000, 0);  // bufsiz 0: no cells
  for (int i = 1; i < TPROF_MAX_WINDOWS; ++i) {
    tprof_window_add b = a;
    ASSERT_EQ(ioctl_errno(s.fd(), TPROF_IOC_WINDOW_ADD, &b), 0) << i;
    EXPECT_EQ(b.id, uint32_t(i));
  }
  a = ProfilWindow(0, SpinAddr(), 0x8000, 0);
  EXPECT_EQ(ioctl_errno(s.fd(), TPROF_IOC_WINDOW_ADD, &a), ENOSPC);
  auto list = ListWindows(s.fd());
  ASSERT_TRUE(list);
  EXPECT_EQ(list->size(), size_t(TPROF_MAX_WINDOWS));
  // READ: unknown id, bad pointer (nothing lost), paging.
  tprof_windows_test_spin(50);
  ASSERT_TRUE(s.Stop());
  rd = {};
  rd.id = TPROF_MAX_WINDOWS;
  EXPECT_EQ(ioctl_errno(s.fd(), TPROF_IOC_WINDOW_READ, &rd), EINVAL);
  rd = {};
  rd.id = 0;
  rd.cells = 8;  // unmapped
  rd.capacity = 16;
  EXPECT_EQ(ioctl_errno(s.fd(), TPROF_IOC_WINDOW_READ, &rd), EFAULT);
  WindowCounts w0 = ReadOrFail(s.fd(), 0);
  uint64_t sum = 0;
  for (uint32_t v : w0.cells) sum += v;
  EXPECT_EQ(sum, w0.info.in_range);
  std::vector<uint32_t> page(10);
  rd = {};
  rd.id = 0;
  rd.cells = reinterpret_cast<uintptr_t>(page.data());
  rd.capacity = page.size();
  rd.first = w0.info.nr_cells - 4;
  ASSERT_EQ(ioctl_errno(s.fd(), TPROF_IOC_WINDOW_READ, &rd), 0);
  EXPECT_EQ(rd.copied, 4u);
  EXPECT_EQ(rd.info.in_range, w0.info.in_range) << "a failed read lost nothing";
}

TEST(WindowTest, UnprivilegedProcessWindowsOnly) {
  ScopedParanoid paranoid(2);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)) _exit(10);
    SamplingOptions o;
    o.pid = 0;
    auto s = SamplingSession::Start(o);
    if (!s) _exit(11);
    tprof_window_add k{};
    k.kind = TPROF_WINDOW_KERNEL;
    k.start = 0xffffffff80000000ULL;
    k.length = 4096;
    k.block_bytes = 64;
    if (ioctl(s->fd(), TPROF_IOC_WINDOW_ADD, &k) == 0 || errno != EPERM) _exit(12);
    tprof_window_add p = ProcessWindow(SpinAddr(), 4096, 64);
    p.pid = 1;
    if (ioctl(s->fd(), TPROF_IOC_WINDOW_ADD, &p) == 0 || errno != EACCES) _exit(13);
    p.pid = 0;
    if (ioctl(s->fd(), TPROF_IOC_WINDOW_ADD, &p) != 0) _exit(14);
    tprof_window_add f = ProfilWindow(0, SpinAddr() & ~1ULL, 0x10000, 4096);
    if (ioctl(s->fd(), TPROF_IOC_WINDOW_ADD, &f) != 0) _exit(15);
    tprof_windows_test_spin(200);
    auto w = ReadWindow(s->fd(), 0);
    if (!w || w->info.in_range == 0) _exit(16);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see the _exit codes in the child";
}

// The CLI: windows are options of record/start, kept in the profile.
TEST(WindowTest, CliRecordSavesWindowsAndShowPrintsHistograms) {
  std::string out;
  ASSERT_EQ(RunCommand("cd /tmp && tprofctl record -o /tmp/win.data"
                       " --window kernel:0xffffffff80000000:0x80000000:0x200000"
                       " --window pid=0:0:0x800000000000:0x80000000"
                       " -- sh -c 'i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done' 2>&1",
                       &out),
            0)
      << out;
  out.clear();
  ASSERT_EQ(RunCommand("tprofctl window list -i /tmp/win.data 2>&1", &out), 0) << out;
  EXPECT_NE(out.find("window 0: kernel, 0xffffffff80000000, 2147483648 bytes in 2097152-byte blocks"), std::string::npos)
      << out;
  EXPECT_NE(out.find("window 1: process pid"), std::string::npos) << out;
  out.clear();
  ASSERT_EQ(RunCommand("tprofctl window show --id 1 -i /tmp/win.data 2>&1", &out), 0) << out;
  EXPECT_EQ(out.find("window 0:"), std::string::npos) << out;
  EXPECT_NE(out.find("#"), std::string::npos) << "no histogram bar: " << out;
  EXPECT_NE(out.find("in range "), std::string::npos) << out;
  EXPECT_NE(out.find("out of range "), std::string::npos) << out;
  // In the profile, nowhere else.
  auto profile = ReadProfile("/tmp/win.data");
  ASSERT_TRUE(profile) << profile.error().message();
  ASSERT_EQ(profile->windows.size(), 2u);
  EXPECT_EQ(access("/tmp/win.data.windows", F_OK), -1);
  // (how many depends on the host's load; the exact counts are checked
  // against records in the tests above)
  EXPECT_GT(profile->windows[1].info.in_range, 0u) << "the shell's loop, in user space";
  out.clear();
  EXPECT_EQ(RunCommand("tprofctl record -o /tmp/win2.data --profil 0:0:0x8000:64 -- true 2>&1", &out),
            1)
      << out;
  out.clear();
  EXPECT_EQ(RunCommand("tprofctl record --window kernel:1:2 -- true 2>&1", &out), 2) << out;
  out.clear();
  EXPECT_EQ(RunCommand("tprofctl window add 2>&1", &out), 2) << out;
}

}  // namespace
}  // namespace tprof::test
