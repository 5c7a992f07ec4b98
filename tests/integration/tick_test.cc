// Sampling in the kernel's scheduler tick (`record --clock tick`): the
// known 60/30/10 split comes out as the perf clock gives it; the process
// gets about HZ samples per CPU second; idle CPUs, whose tick stops, are
// counted as idle ticks and the achieved rate is reported; where the tick
// cannot be hooked, record falls back to the perf clock and says so; an
// unprivileged user records its own command; the module checks the
// config. Margins follow the samples each recording holds, never time.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "../common/temp_dir.h"
#include "guest_env.h"
#include "profile_json.h"
#include "tprof/base/scoped_fd.h"

namespace tprof::test {
namespace {

constexpr char kTickParam[] = "/sys/module/tprof/parameters/tick_sampling";

// The module parameter that hides the tick (as a kernel without the hook),
// put back whatever happens.
class ScopedTickParam {
 public:
  explicit ScopedTickParam(const char* value) { ok_ = Write(value); }
  ~ScopedTickParam() { EXPECT_TRUE(Write("1")) << kTickParam; }
  bool ok() const { return ok_; }

 private:
  static bool Write(const char* v) {
    std::ofstream out(kTickParam);
    out << v << "\n";
    out.flush();
    return static_cast<bool>(out);
  }
  bool ok_ = false;
};

struct ThreeShares {
  uint64_t a = 0, b = 0, c = 0;
  uint64_t n() const { return a + b + c; }
  double pct(uint64_t x) const { return Percent(x, n()); }
};

ThreeShares SharesOf(const Json& j) {
  ThreeShares s;
  auto tables = FunctionTables(j, "tprof-wl-shares");
  EXPECT_EQ(tables.size(), 1u) << "one tprof-wl-shares process";
  if (tables.size() != 1) return s;
  s.a = FunctionSamples(*tables[0], "wl_alpha");
  s.b = FunctionSamples(*tables[0], "wl_beta");
  s.c = FunctionSamples(*tables[0], "wl_gamma");
  return s;
}

uint64_t Attribute(const Json& j, const char* key) {
  const Json& a = j.at("attributes");
  return a.contains(key) ? std::stoull(a.at(key).get<std::string>()) : 0;
}

class TickSampling : public ::testing::Test {
 protected:
  Result Record(const std::string& name, const std::string& options, const std::string& cmd) {
    return Sh("cd " + dir_.path() + " && tprofctl record -q -o " + name + " " + options +
              " -- " + cmd);
  }
  TempDir dir_;
};

// The split of tprof-wl-shares in the tick and on the perf clock: each
// share within 3 points of the perf clock's, or what the two recordings'
// samples allow (three standard deviations of the difference of two
// binomial shares) if wider, plus how much the workload's own split moved
// between the two runs. The process gets HZ samples per second of its CPU
// time: none of another hrtimer's expiries is taken for the tick, and the
// tick is not missed.
TEST_F(TickSampling, SharesOfThreeFunctionsMatchThePerfClock) {
  Result tick = Record("tick.data", "--clock tick", "tprof-wl-shares --ms 4000");
  ASSERT_EQ(tick.rc, 0) << tick.out;
  EXPECT_FALSE(Contains(tick.out, "instead")) << "no fallback here:\n" << tick.out;
  Result perf = Record("perf.data", "-F 1000", "tprof-wl-shares --ms 4000");
  ASSERT_EQ(perf.rc, 0) << perf.out;
  auto tj = DumpJson(dir_.File("tick.data")), pj = DumpJson(dir_.File("perf.data"));
  ASSERT_TRUE(tj && pj);
  auto tw = ParseWorkloadLine(tick.out), pw = ParseWorkloadLine(perf.out);
  ASSERT_TRUE(tw && pw) << tick.out << perf.out;

  EXPECT_EQ((*tj).at("attributes").value("clock", std::string()), "tick");
  const uint64_t hz = Attribute(*tj, "frequency_hz");
  EXPECT_TRUE(hz == 100 || hz == 250 || hz == 300 || hz == 1000) << "HZ " << hz;
  const Json* process = ProcessRow(*tj, "tprof-wl-shares");
  ASSERT_TRUE(process);
  const double expected = static_cast<double>(tw->total_ns) / 1e9 * static_cast<double>(hz);
  const double ratio = static_cast<double>(N(process->at("samples"))) / expected;
  std::printf("  tick: %llu samples for %.0f ticks of CPU time (ratio %.3f) at HZ %llu\n",
              static_cast<unsigned long long>(N(process->at("samples"))), expected, ratio,
              static_cast<unsigned long long>(hz));
  EXPECT_LE(ratio, 1.15) << "more samples than ticks: another timer is taken for the tick";
  EXPECT_GE(ratio, 0.6) << "most ticks were not sampled";

  const ThreeShares t = SharesOf(*tj), p = SharesOf(*pj);
  ASSERT_GE(t.n(), 300u) << "4 s of CPU at HZ";
  ASSERT_GE(p.n(), 1000u);
  const std::pair<const char*, std::pair<uint64_t, uint64_t>> parts[] = {
      {"wl_alpha", {t.a, p.a}}, {"wl_beta", {t.b, p.b}}, {"wl_gamma", {t.c, p.c}}};
  for (const auto& [fn, counts] : parts) {
    const double tp = t.pct(counts.first), pp = p.pct(counts.second);
    const double q = pp / 100;
    const double sigma = 100 * std::sqrt(q * (1 - q) * (1.0 / static_cast<double>(t.n()) +
                                                        1.0 / static_cast<double>(p.n())));
    const double moved = std::abs(tw->percent.at(fn) - pw->percent.at(fn));
    std::printf("  %s: tick %.1f%%, perf clock %.1f%% (3 sigma %.1f, workload moved %.1f)\n", fn,
                tp, pp, 3 * sigma, moved);
    EXPECT_NEAR(tp, pp, std::max(3.0, 3 * sigma) + moved) << fn;
  }
}

// Every CPU while the guest mostly sleeps: the CPUs stop their tick, and
// the ticks they skip come back as idle ticks, bounded by what the
// recording's CPUs and span hold; with them the achieved rate is HZ's, and
// it is reported.
TEST_F(TickSampling, IdleCpusAreCountedAsIdleTicks) {
  Result r = Record("idle.data", "-a --clock tick", "sleep 2");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = DumpJson(dir_.File("idle.data"));
  ASSERT_TRUE(j);
  const uint64_t hz = Attribute(*j, "frequency_hz");
  const uint64_t idle = N(j->at("idle_ticks")), iowait = N(j->at("iowait_ticks"));
  const double span_s = static_cast<double>(N(j->at("duration_ns"))) / 1e9;
  const size_t cpus = j->at("cpus").size();
  std::printf("  %llu idle ticks (%llu iowait), %llu samples, %zu CPUs, %.2f s at HZ %llu\n",
              static_cast<unsigned long long>(idle), static_cast<unsigned long long>(iowait),
              static_cast<unsigned long long>(N(j->at("samples"))), cpus, span_s,
              static_cast<unsigned long long>(hz));
  EXPECT_GT(idle, 0u) << "a sleeping guest's CPUs stop their tick";
  EXPECT_LE(iowait, idle);
  EXPECT_LE(static_cast<double>(idle), (span_s + 1) * static_cast<double>(hz * cpus))
      << "more idle ticks than the CPUs had";
  ASSERT_TRUE(j->contains("sampling_rate")) << "a recording of every CPU states its rate";
  const Json& rate = j->at("sampling_rate");
  EXPECT_EQ(N(rate.at("requested_hz")), hz);
  EXPECT_FALSE(rate.at("low").get<bool>()) << rate.dump();
  EXPECT_LE(rate.at("achieved_hz").get<double>(), 1.1 * static_cast<double>(hz)) << rate.dump();
  Result text = Sh("tprofctl dump -i " + dir_.File("idle.data") + " --top 1");
  ASSERT_EQ(text.rc, 0) << text.out;
  EXPECT_TRUE(Contains(text.out, "sampling: in the scheduler tick, HZ ")) << text.out;
  EXPECT_TRUE(Contains(text.out, "idle ticks: ")) << text.out;
}

// Where the tick cannot be hooked (the module parameter says so, as a
// kernel without the hook would), --clock tick records on the perf clock
// and says why, and the file says which clock it was.
TEST_F(TickSampling, FallsBackToThePerfClockWhereTheTickCannotBeHooked) {
  ScopedTickParam off("0");
  ASSERT_TRUE(off.ok()) << kTickParam;
  Result r = Record("fb.data", "--clock tick", "tprof-wl-shares --ms 300");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "--clock tick: starting sampling: the module cannot hook this "
                              "kernel's scheduler tick (EOPNOTSUPP); sampling on the perf clock "
                              "at 1000 Hz instead"))
      << r.out;
  auto j = DumpJson(dir_.File("fb.data"));
  ASSERT_TRUE(j);
  EXPECT_FALSE(j->at("attributes").contains("clock")) << j->at("attributes").dump();
  EXPECT_EQ(Attribute(*j, "frequency_hz"), 1000u);
  EXPECT_GT(N(j->at("samples")), 0u);
}

// An unprivileged user's own command in the tick: its samples only, with
// kernel addresses withheld, and no idle ticks (they are the machine's).
TEST_F(TickSampling, UnprivilegedUserRecordsItsOwnCommand) {
  ScopedParanoid paranoid(2);  // user mode only
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0777), 0);
  Result r = RunAsNobody(dir_.path(),
                         "tprofctl record -q --clock tick -o own.data -- tprof-wl-shares --ms 1500");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = DumpJson(dir_.File("own.data"));
  ASSERT_TRUE(j);
  EXPECT_EQ((*j).at("attributes").value("clock", std::string()), "tick");
  ASSERT_EQ(j->at("processes").size(), 1u) << "only the command is sampled";
  const Json* p = ProcessRow(*j, "tprof-wl-shares");
  ASSERT_TRUE(p);
  EXPECT_GT(N(p->at("samples")), 100u);
  EXPECT_EQ(N(p->at("kernel")), 0u) << "paranoid 2: user mode only";
  EXPECT_EQ(N(j->at("idle_ticks")), 0u);
  EXPECT_EQ(N(j->at("idle").at("samples")), 0u);
}

// The config as the module checks it: no frequency, config or period with
// the tick (EINVAL); EOPNOTSUPP where the tick cannot be hooked; at HZ.
TEST_F(TickSampling, TheModuleChecksTheConfig) {
  ScopedFd fd(::open("/dev/tprof", O_RDWR | O_CLOEXEC));
  ASSERT_GE(fd.get(), 0);
  auto start = [&fd](tprof_sampling_config c) {
    return ::ioctl(fd.get(), TPROF_IOC_SAMPLING_START, &c) == 0 ? 0 : errno;
  };
  tprof_sampling_config c{};
  c.pid = TPROF_PID_ALL;
  c.event_type = TPROF_SAMPLE_ON_TICK;
  tprof_sampling_config bad = c;
  bad.frequency_hz = 250;
  EXPECT_EQ(start(bad), EINVAL) << "a frequency";
  bad = c;
  bad.event_config = 1;
  EXPECT_EQ(start(bad), EINVAL) << "an event config";
  bad = c;
  bad.event_period = 1;
  EXPECT_EQ(start(bad), EINVAL) << "a period";
  {
    ScopedTickParam off("0");
    ASSERT_TRUE(off.ok());
    EXPECT_EQ(start(c), EOPNOTSUPP);
  }
  tprof_sampling_config out = c;
  ASSERT_EQ(::ioctl(fd.get(), TPROF_IOC_SAMPLING_START, &out), 0) << std::strerror(errno);
  EXPECT_TRUE(out.frequency_out == 100 || out.frequency_out == 250 || out.frequency_out == 300 ||
              out.frequency_out == 1000)
      << out.frequency_out;
  tprof_sampling_status st{};
  ASSERT_EQ(::ioctl(fd.get(), TPROF_IOC_SAMPLING_STATUS, &st), 0);
  EXPECT_EQ(st.event_type, static_cast<uint32_t>(TPROF_SAMPLE_ON_TICK));
  EXPECT_EQ(st.frequency_hz, out.frequency_out);
  EXPECT_EQ(::ioctl(fd.get(), TPROF_IOC_SAMPLING_STOP), 0);
}

// Where timers are low resolution (highres=off: clock_getres() says a
// tick) the tick is no hrtimer: the module refuses it and record falls
// back to the perf clock, saying why. make check boots one 6.1 guest with
// highres=off for this; in every other guest the tick is taken. The
// guest's command line says which it must be.
TEST_F(TickSampling, NeedsHighResolutionTimers) {
  timespec res{};
  ASSERT_EQ(::clock_getres(CLOCK_MONOTONIC, &res), 0);
  const bool high_res = res.tv_sec == 0 && res.tv_nsec == 1;
  std::ifstream cmdline_file("/proc/cmdline");
  std::string cmdline;
  std::getline(cmdline_file, cmdline);
  const bool told_off = Contains(cmdline, "highres=off");
  ASSERT_EQ(high_res, !told_off) << "clock_getres: " << res.tv_nsec << " ns; command line: " << cmdline;
  ScopedFd fd(::open("/dev/tprof", O_RDWR | O_CLOEXEC));
  ASSERT_GE(fd.get(), 0);
  tprof_sampling_config c{};
  c.pid = TPROF_PID_ALL;
  c.event_type = TPROF_SAMPLE_ON_TICK;
  const int err = ::ioctl(fd.get(), TPROF_IOC_SAMPLING_START, &c) == 0 ? 0 : errno;
  EXPECT_EQ(err, high_res ? 0 : EOPNOTSUPP) << std::strerror(err);
  if (err == 0) {
    EXPECT_EQ(::ioctl(fd.get(), TPROF_IOC_SAMPLING_STOP), 0);
  }
  fd.reset();
  if (high_res) return;
  Result r = Record("lowres.data", "--clock tick", "tprof-wl-shares --ms 300");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "timers are not high resolution (highres=off)")) << r.out;
  EXPECT_TRUE(Contains(r.out, "sampling on the perf clock at 1000 Hz instead")) << r.out;
}

}  // namespace
}  // namespace tprof::test
