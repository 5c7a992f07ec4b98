// Counting in the module (`record --aggregate`, TPROF_SAMPLING_AGGREGATE):
// the counts equal, exactly, what the records of the same samples reduce
// to (AGGREGATE_RECORDS writes both), by address and by whole stack; the
// known split and call tree come out of the counts alone, in the tick and
// on the clock; the accounting holds (counted + delivered + lost ==
// taken); AGGREGATE_READ checks its arguments, keeps
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
#include "folded_stacks.h"
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
  uint64_t overflowed = 0, taken = 0, lost = 0, undefined = 0;
  std::map<uint32_t, uint64_t> overflowed_on;  // by CPU
};

BothWays ReadBothWays(SamplingSession& session) {
  BothWays b;
  ProfileBuilder records, counts;
  for (int i = 0; i < 2000 && !session.Finished(); ++i) {
    auto n = session.Consume([&](uint32_t, const tprof_rec_header* h, size_t avail) {
      // A record that names its stack key defines it for the counts too.
      tprof_rec_sample s;
      if (h->type == TPROF_REC_SAMPLE && h->size >= sizeof(s) && h->size <= avail) {
        std::memcpy(&s, h, sizeof(s));
        if (s.flags & TPROF_SAMPLE_STACK_KEY) {
          std::vector<unsigned char> def(reinterpret_cast<const unsigned char*>(h),
                                         reinterpret_cast<const unsigned char*>(h) + h->size);
          s.flags |= TPROF_SAMPLE_COUNTED;
          std::memcpy(def.data(), &s, sizeof(s));
          counts.AddRecord(reinterpret_cast<const tprof_rec_header*>(def.data()), def.size());
        }
      }
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
  b.undefined = counts.undefined_stack_key_samples();
  b.from_records = records.Finish();
  b.from_counts = counts.Finish();
  return b;
}

// A profile's samples by their key and whole stack (none: empty).
std::map<std::pair<SampleKey, RawStack>, uint64_t> ByStack(const Profile& p) {
  std::map<std::pair<SampleKey, RawStack>, uint64_t> out;
  std::map<SampleKey, uint64_t> stacked;
  for (const auto& [k, n] : p.stack_samples) {
    out[{k.sample, p.stacks.at(k.stack - 1)}] += n;
    stacked[k.sample] += n;
  }
  for (const auto& [k, n] : p.samples)
    if (n > stacked[k]) out[{k, RawStack{}}] += n - stacked[k];
  return out;
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

// The same with stacks (ABI 1.22): each stack is counted under its key,
// which its first record defines; the counts by key and whole stack equal
// the records', but for what overflowed, and no count names a key that no
// record defined.
TEST(Aggregate, StackCountsEqualTheRecordsOfTheSameSamples) {
  for (uint32_t clock : {uint32_t{TPROF_SAMPLE_ON_CLOCK}, uint32_t{TPROF_SAMPLE_ON_TICK}}) {
    SCOPED_TRACE(clock == TPROF_SAMPLE_ON_TICK ? "in the tick" : "on the clock");
    SamplingOptions o;
    o.event_type = clock;
    o.stack_depth = 64;
    o.aggregate = true;
    o.aggregate_records = true;
    o.half_bytes = 1024 * 1024;
    auto session = SamplingSession::Start(o);
    ASSERT_TRUE(session) << session.error().message();
    Result w = Sh("tprof-wl-calltree --ms 800");
    ASSERT_EQ(w.rc, 0) << w.out;
    ASSERT_TRUE(session->Stop());
    BothWays b = ReadBothWays(*session);
    ASSERT_EQ(b.lost, 0u);
    EXPECT_EQ(b.undefined, 0u) << "every key a count names was defined by a record";
    EXPECT_GT(b.from_counts.TotalSamples(), 100u);
    EXPECT_GT(b.from_counts.stack_samples.size(), 3u) << "the call tree's stacks";
    EXPECT_EQ(b.from_counts.TotalSamples() + b.overflowed, b.from_records.TotalSamples());
    EXPECT_EQ(b.from_records.TotalSamples(), b.taken) << "each sample taken once";
    const auto records = ByStack(b.from_records), counts = ByStack(b.from_counts);
    uint64_t uncounted = 0;
    for (const auto& [key, n] : records) {
      auto it = counts.find(key);
      const uint64_t counted = it == counts.end() ? 0 : it->second;
      EXPECT_LE(counted, n) << "pid " << key.first.pid << " ip 0x" << std::hex << key.first.ip
                            << std::dec << " with " << key.second.kernel.size() << "+"
                            << key.second.user.size() << " frames";
      uncounted += n > counted ? n - counted : 0;
    }
    EXPECT_EQ(uncounted, b.overflowed) << "the counts lack exactly what overflowed";
    for (const auto& [key, n] : counts)
      EXPECT_TRUE(records.count(key)) << "counted without a record: pid " << key.first.pid << " ip 0x"
                                      << std::hex << key.first.ip;
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
  Result bad = Sh("tprofctl record -q --aggregate --call-graph dwarf -o x.data -- true");
  EXPECT_EQ(bad.rc, 2) << bad.out;
  EXPECT_TRUE(Contains(bad.out, "--call-graph dwarf copies them for later")) << bad.out;
}

// `record --aggregate -g` in the tick: the call tree of tprof-wl-calltree
// (main -> wl_a -> wl_b -> wl_lib_call -> wl_d, wl_a -> wl_c) from counted
// stacks: wl_d's samples carry their callers, and wl_b's inclusive share
// is what the workload measured (wl_b's and wl_d's own time).
TEST(Aggregate, RecordCountsStacksWithTheirCallersInTheTick) {
  TempDir dir;
  Result r = Sh("cd " + dir.path() +
                " && tprofctl record -q --clock tick --aggregate -g -o agg.data -- "
                "tprof-wl-calltree --ms 3000");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = DumpJson(dir.File("agg.data"));
  ASSERT_TRUE(j);
  EXPECT_EQ(j->at("attributes").value("aggregate_undefined_stacks", std::string()), "0");
  Result folded = Sh("tprofctl dump -i " + dir.File("agg.data") + " --format folded");
  ASSERT_EQ(folded.rc, 0) << folded.out;
  SCOPED_TRACE(folded.out.substr(0, 3000));
  uint64_t d = 0, d_whole = 0, tree = 0, b_incl = 0;
  for (const Stack& s : ParseFolded(folded.out, "tprof-wl-calltr")) {
    if (!s.Has("wl_a") || !s.Has("main")) continue;
    tree += s.samples;
    if (s.Has("wl_b")) b_incl += s.samples;
    if (s.UserLeaf() != "wl_d") continue;
    d += s.samples;
    if (s.UserPath().find("main;wl_a;wl_b;wl_lib_call;wl_d") != std::string::npos) d_whole += s.samples;
  }
  ASSERT_GE(tree, 300u) << r.out;
  EXPECT_GE(d_whole * 100, d * 95) << "wl_d's samples with all their callers, of " << d;
  // The workload's own split: "wl_a=NS ns ... wl_d=NS ns".
  std::map<std::string, double> ns;
  double sum = 0;
  for (const char* fn : {"wl_a", "wl_b", "wl_c", "wl_d"}) {
    const size_t at = r.out.find(std::string(fn) + "=");
    ASSERT_NE(at, std::string::npos) << r.out;
    ns[fn] = std::stod(r.out.substr(at + 5));
    sum += ns[fn];
  }
  const double want = 100 * (ns["wl_b"] + ns["wl_d"]) / sum, got = Percent(b_incl, tree);
  const double sigma = 100 * std::sqrt(want / 100 * (1 - want / 100) / double(tree));
  std::printf("  wl_b inclusive: counted %.1f%%, workload %.1f%% (3 sigma %.1f)\n", got, want, 3 * sigma);
  EXPECT_NEAR(got, want, std::max(5.0, 3 * sigma));
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
