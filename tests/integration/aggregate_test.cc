// Counting in the module (`record --aggregate`, TPROF_SAMPLING_AGGREGATE):
// the counts equal, exactly, what the records of the same samples reduce
// to (AGGREGATE_RECORDS writes both); the known split comes out of the
// counts alone, in the tick and on the clock; the accounting holds (counted
// + delivered + lost == taken); AGGREGATE_READ checks its arguments, keeps
// the counts when its copy fails, and is the owner's alone.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../common/temp_dir.h"
#include "guest_env.h"
#include "profile_json.h"
#include "tprof/analysis/profile.h"
#include "tprof/base/scoped_fd.h"
#include "tprof/device/sampling.h"

namespace tprof::test {
namespace {

// Every record of a stopped session, and every CPU's counts, reduced
// apart.
struct BothWays {
  Profile from_records, from_counts;
  uint64_t overflowed = 0, taken = 0, lost = 0;
  std::map<uint32_t, uint64_t> overflowed_on;  // by CPU
};

BothWays ReadBothWays(SamplingSession& session) {
  BothWays b;
  ProfileBuilder records, counts;
  for (int i = 0; i < 2000 && !session.Finished(); ++i) {
    auto n = session.Consume([&](uint32_t, const tprof_rec_header* h, size_t avail) {
      return records.AddRecord(h, avail) != 0;
    });
    EXPECT_TRUE(n) << n.error().message();
    (void)session.Wait(5);
  }
  std::vector<tprof_aggregate_entry> entries;
  for (uint32_t cpu = 0; cpu < session.nr_cpu_ids(); ++cpu) {
    auto read = session.ReadAggregate(cpu, &entries);
    EXPECT_TRUE(read) << read.error().message();
    if (!read) continue;
    counts.AddAggregate(cpu, *read, entries);
    b.overflowed += read->overflowed;
    b.overflowed_on[cpu] += read->overflowed;
    b.taken += session.Totals(cpu).samples_taken;
    b.lost += session.Totals(cpu).lost_samples;
  }
  b.from_records = records.Finish();
  b.from_counts = counts.Finish();
  return b;
}

// The same samples both ways: AGGREGATE_RECORDS writes each as a record
// too, so the counts must equal the records' reduction key by key, but for
// the samples that overflowed: a key whose probed slots (8 from its hash)
// were all taken by other keys is a record only, however empty the rest of
// the table (1 of 3,937 samples in the arm64 debug kernel).
TEST(Aggregate, CountsEqualTheRecordsOfTheSameSamples) {
  for (uint32_t clock : {uint32_t{TPROF_SAMPLE_ON_CLOCK}, uint32_t{TPROF_SAMPLE_ON_TICK}}) {
    SCOPED_TRACE(clock == TPROF_SAMPLE_ON_TICK ? "in the tick" : "on the clock");
    SamplingOptions o;
    o.event_type = clock;
    o.aggregate = true;
    o.aggregate_records = true;
    o.half_bytes = 1024 * 1024;  // nothing lost: then the records are every sample
    auto session = SamplingSession::Start(o);
    ASSERT_TRUE(session) << session.error().message();
    EXPECT_EQ(session->config().aggregate_slots, uint32_t{TPROF_AGGREGATE_DEFAULT_SLOTS});
    Result w = Sh("tprof-wl-shares --ms 800");
    ASSERT_EQ(w.rc, 0) << w.out;
    ASSERT_TRUE(session->Stop());
    BothWays b = ReadBothWays(*session);
    ASSERT_EQ(b.lost, 0u);
    EXPECT_LE(b.overflowed * 100, b.from_records.TotalSamples()) << "the tables had room: few overflow";
    EXPECT_GT(b.from_counts.TotalSamples(), 100u);
    EXPECT_EQ(b.from_counts.TotalSamples() + b.overflowed, b.from_records.TotalSamples());
    EXPECT_EQ(b.from_records.TotalSamples(), b.taken) << "each sample taken once";
    uint64_t uncounted = 0;  // records without their count: the overflowed
    for (const auto& [key, n] : b.from_records.samples) {
      auto it = b.from_counts.samples.find(key);
      const uint64_t counted = it == b.from_counts.samples.end() ? 0 : it->second;
      EXPECT_LE(counted, n) << "pid " << key.pid << " ip 0x" << std::hex << key.ip << " flags 0x" << key.flags
                            << std::dec << ": records " << n << ", counts " << counted;
      uncounted += n > counted ? n - counted : 0;
    }
    EXPECT_EQ(uncounted, b.overflowed) << "the counts lack exactly what overflowed";
    for (const auto& [key, n] : b.from_counts.samples)
      EXPECT_TRUE(b.from_records.samples.count(key))
          << "counted without a record: pid " << key.pid << " ip 0x" << std::hex << key.ip;
    for (const auto& [cpu, c] : b.from_records.cpus)
      EXPECT_EQ(b.from_counts.cpus[cpu].samples + b.overflowed_on[cpu], c.samples) << "cpu " << cpu;
    if (b.overflowed) std::printf("  [aggregate] %llu of %llu samples overflowed\n",
                                  static_cast<unsigned long long>(b.overflowed),
                                  static_cast<unsigned long long>(b.from_records.TotalSamples()));
  }
}

// A table too small for the run: what does not fit comes as records, and
// counts + records are every sample taken.
TEST(Aggregate, WhatDoesNotFitComesAsRecords) {
  SamplingOptions o;
  o.aggregate = true;
  o.aggregate_slots = TPROF_AGGREGATE_MIN_SLOTS;
  o.frequency_hz = 2000;
  o.half_bytes = 1024 * 1024;
  auto session = SamplingSession::Start(o);
  ASSERT_TRUE(session) << session.error().message();
  // Many addresses: the shell and its children, in the kernel and out.
  Result w = Sh("for i in $(seq 40); do tprof-wl-shares --ms 20 >/dev/null; done");
  ASSERT_EQ(w.rc, 0) << w.out;
  ASSERT_TRUE(session->Stop());
  BothWays b = ReadBothWays(*session);
  EXPECT_GT(b.overflowed, 0u) << "48 entries per CPU hold this run's addresses";
  // Every sample with no room came as a record, or was counted lost (the
  // slow debug kernel fills the halves before the end).
  EXPECT_EQ(b.from_records.TotalSamples() + b.lost, b.overflowed);
  EXPECT_EQ(b.from_counts.TotalSamples() + b.from_records.TotalSamples() + b.lost, b.taken);
}

// The split of tprof-wl-shares from the counts alone, in the tick: each
// share within 3 points of the workload's own, or what the samples allow.
TEST(Aggregate, RecordCountsTheKnownSplitInTheTick) {
  TempDir dir;
  Result r = Sh("cd " + dir.path() +
                " && tprofctl record -q --clock tick --aggregate -o agg.data -- tprof-wl-shares --ms 3000");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = DumpJson(dir.File("agg.data"));
  ASSERT_TRUE(j);
  auto w = ParseWorkloadLine(r.out);
  ASSERT_TRUE(w) << r.out;
  EXPECT_EQ(j->at("attributes").value("aggregate_slots", std::string()),
            std::to_string(TPROF_AGGREGATE_DEFAULT_SLOTS));
  EXPECT_EQ(j->at("attributes").value("aggregate_overflowed", std::string()), "0");
  auto tables = FunctionTables(*j, "tprof-wl-shares");
  ASSERT_EQ(tables.size(), 1u);
  const uint64_t a = FunctionSamples(*tables[0], "wl_alpha"), b = FunctionSamples(*tables[0], "wl_beta"),
                 c = FunctionSamples(*tables[0], "wl_gamma");
  ASSERT_GE(a + b + c, 300u);
  for (const auto& [fn, n] : {std::pair{"wl_alpha", a}, {"wl_beta", b}, {"wl_gamma", c}}) {
    const double share = Percent(n, a + b + c), want = w->percent.at(fn);
    const double sigma = 100 * std::sqrt(want / 100 * (1 - want / 100) / double(a + b + c));
    std::printf("  %s: counted %.1f%%, workload %.1f%% (3 sigma %.1f)\n", fn, share, want, 3 * sigma);
    EXPECT_NEAR(share, want, std::max(3.0, 3 * sigma)) << fn;
  }
  Result bad = Sh("tprofctl record -q --aggregate -g -o x.data -- true");
  EXPECT_EQ(bad.rc, 2) << bad.out;
  EXPECT_TRUE(Contains(bad.out, "--aggregate counts addresses; -g records stacks")) << bad.out;
}

// AGGREGATE_READ's arguments, the owner's alone, and a failed copy that
// keeps the counts for the next read.
TEST(Aggregate, ReadChecksItsArgumentsAndKeepsCountsItCouldNotCopy) {
  auto read = [](int fd, tprof_aggregate_read rd) {
    return ::ioctl(fd, TPROF_IOC_SAMPLING_AGGREGATE_READ, &rd) == 0 ? 0 : errno;
  };
  ScopedFd other(::open("/dev/tprof", O_RDWR | O_CLOEXEC));
  ASSERT_GE(other.get(), 0);
  std::vector<tprof_aggregate_entry> room(TPROF_AGGREGATE_DEFAULT_SLOTS);
  tprof_aggregate_read rd{};
  rd.max_entries = TPROF_AGGREGATE_DEFAULT_SLOTS;
  rd.entries = reinterpret_cast<uintptr_t>(room.data());
  EXPECT_EQ(read(other.get(), rd), ENODATA) << "no session";

  {
    auto no_counts = SamplingSession::Start(SamplingOptions{});
    ASSERT_TRUE(no_counts) << no_counts.error().message();
    EXPECT_EQ(read(no_counts->fd(), rd), EINVAL) << "a session that does not aggregate";
    ASSERT_TRUE(no_counts->Stop());
  }  // closed: its session ends

  SamplingOptions o;
  o.aggregate = true;
  o.frequency_hz = 2000;
  auto session = SamplingSession::Start(o);
  ASSERT_TRUE(session) << session.error().message();
  const int fd = session->fd();
  EXPECT_EQ(read(other.get(), rd), EPERM) << "another descriptor";
  tprof_aggregate_read bad = rd;
  bad.cpu = 1u << 30;
  EXPECT_EQ(read(fd, bad), EINVAL);
  bad = rd;
  bad.resv[1] = 1;
  EXPECT_EQ(read(fd, bad), EINVAL);
  bad = rd;
  bad.max_entries = TPROF_AGGREGATE_DEFAULT_SLOTS - 1;
  EXPECT_EQ(read(fd, bad), ENOSPC);
  Result w = Sh("tprof-wl-shares --ms 300 >/dev/null");
  ASSERT_EQ(w.rc, 0) << w.out;
  ASSERT_TRUE(session->Stop());
  // A copy into an unwritable page fails; the counts stay for the next read.
  void* ro = ::mmap(nullptr, room.size() * sizeof(room[0]), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(ro, MAP_FAILED);
  uint64_t first = 0, again = 0, overflowed = 0;
  for (uint32_t cpu = 0; cpu < session->nr_cpu_ids(); ++cpu) {
    tprof_aggregate_read r = rd;
    r.cpu = cpu;
    r.entries = reinterpret_cast<uintptr_t>(ro);
    const int err = read(fd, r);
    EXPECT_TRUE(err == EFAULT || err == 0) << std::strerror(err);  // 0: nothing counted there
    std::vector<tprof_aggregate_entry> entries;
    auto taken = session->ReadAggregate(cpu, &entries);
    ASSERT_TRUE(taken) << taken.error().message();
    first += taken->samples;
    overflowed += taken->overflowed;
    auto twice = session->ReadAggregate(cpu, &entries);
    ASSERT_TRUE(twice);
    again += twice->samples;
  }
  ::munmap(ro, room.size() * sizeof(room[0]));
  EXPECT_GT(first, 0u) << "the counts a failed copy left";
  EXPECT_EQ(again, 0u) << "a read takes the counts";
  const CpuBufferTotals t = session->TotalsAll();
  EXPECT_EQ(first + overflowed + t.lost_samples, t.samples_taken)
      << "counted, or written as a record, or lost: every sample taken";
}

}  // namespace
}  // namespace tprof::test
