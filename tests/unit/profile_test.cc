// ProfileBuilder's reduction of raw records, the profile file, and the
// stop-time snapshots (kallsyms, perf maps).
#include "tprof/analysis/profile.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "../common/records.h"
#include "../common/temp_dir.h"
#include "tprof/analysis/elf_snapshot.h"
#include "tprof/analysis/profile_file.h"
#include "tprof/base/gzip.h"

namespace {

using tprof::CallerKey;
using tprof::Mapping;
using tprof::Profile;
using tprof::ProfileBuilder;
using tprof::SampleKey;
using tprof::test::CommRec;
using tprof::test::ExitRec;
using tprof::test::IdleRec;
using tprof::test::LostRec;
using tprof::test::Records;
using tprof::test::SampleRec;
using tprof::test::TempDir;

constexpr uint64_t kKernelIp = 0xffffffff81001234;

TEST(ProfileBuilder, ReducesSamplesToCountsPerAddressAndMode) {
  ProfileBuilder b;
  Records r;
  for (int i = 0; i < 3; ++i) r.Add(SampleRec(10, 7, 0x401000, TPROF_SAMPLE_USER, 0));
  r.Add(SampleRec(10, 7, 0x401000, TPROF_SAMPLE_USER, 1));
  r.Add(SampleRec(10, 7, kKernelIp, 0, 1));  // kernel: space id dropped
  r.Add(SampleRec(0, 0, kKernelIp, TPROF_SAMPLE_IDLE, 1));
  EXPECT_EQ(b.AddRecords(r.data(), r.size()), r.size());
  Profile p = b.Finish();
  ASSERT_EQ(p.samples.size(), 3u);
  EXPECT_EQ((p.samples[{10, 7, 0x401000, TPROF_SAMPLE_USER}]), 4u);
  EXPECT_EQ((p.samples[{10, 0, kKernelIp, 0}]), 1u) << "kernel samples are keyed without space";
  EXPECT_EQ((p.samples[{0, 0, kKernelIp, TPROF_SAMPLE_IDLE}]), 1u);
  EXPECT_EQ(p.cpus[0].samples, 3u);
  EXPECT_EQ(p.cpus[1].samples, 3u);
  EXPECT_EQ(p.TotalSamples(), 6u);
  EXPECT_EQ(p.records.samples, 6u);
}

TEST(ProfileBuilder, CountsCallerEdgesOnlyWhenTheCallerIsValid) {
  ProfileBuilder b;
  Records r;
  r.Add(SampleRec(10, 7, 0x401000, TPROF_SAMPLE_USER, 0, /*caller=*/0x402000));
  r.Add(SampleRec(10, 7, 0x401000, TPROF_SAMPLE_USER, 0, 0x402000));
  r.Add(SampleRec(10, 7, 0x401000, TPROF_SAMPLE_USER, 0, 0x403000));
  auto no_flag = SampleRec(10, 7, 0x401000, TPROF_SAMPLE_USER, 0, 0x404000);
  no_flag.flags &= ~TPROF_SAMPLE_CALLER;
  r.Add(no_flag);
  b.AddRecords(r.data(), r.size());
  Profile p = b.Finish();
  SampleKey key{10, 7, 0x401000, TPROF_SAMPLE_USER};
  EXPECT_EQ(p.samples[key], 4u) << "the CALLER bit is not part of the sample key";
  ASSERT_EQ(p.caller_edges.size(), 2u);
  EXPECT_EQ((p.caller_edges[CallerKey{key, 0x402000}]), 2u);
  EXPECT_EQ((p.caller_edges[CallerKey{key, 0x403000}]), 1u);
}

TEST(ProfileBuilder, InternsStacksInATableAndCountsSamplesPerStack) {
  ProfileBuilder b;
  Records r;
  const auto user = SampleRec(10, 7, 0x401000, TPROF_SAMPLE_USER, 0);
  r.StackSample(user, TPROF_STACK_LEAF_RA, {}, {0x401100, 0x402200, 0x403300});
  r.StackSample(user, TPROF_STACK_LEAF_RA, {}, {0x401100, 0x402200, 0x403300});
  r.StackSample(user, 0, {}, {0x402200});
  // A kernel-mode sample: its user part is in space 7 though its key is not.
  r.StackSample(SampleRec(10, 7, kKernelIp, 0, 1), TPROF_STACK_USER_IP,
                {kKernelIp + 0x40, kKernelIp + 0x80}, {0x401010, 0x402200});
  r.Add(user);  // without a stack
  EXPECT_EQ(b.AddRecords(r.data(), r.size()), r.size());
  Profile p = b.Finish();
  ASSERT_EQ(p.stacks.size(), 3u) << "two identical stacks are stored once";
  EXPECT_EQ(p.stacks[0].user, (std::vector<uint64_t>{0x401100, 0x402200, 0x403300}));
  EXPECT_EQ(p.stacks[0].flags, uint32_t{TPROF_STACK_LEAF_RA});
  EXPECT_EQ(p.stacks[2].kernel, (std::vector<uint64_t>{kKernelIp + 0x40, kKernelIp + 0x80}));
  EXPECT_EQ(p.stacks[2].space_id, 7u);
  const SampleKey ukey{10, 7, 0x401000, TPROF_SAMPLE_USER};
  EXPECT_EQ(p.samples[ukey], 4u);
  EXPECT_EQ((p.stack_samples[{ukey, 1}]), 2u);
  EXPECT_EQ((p.stack_samples[{ukey, 2}]), 1u);
  EXPECT_EQ((p.stack_samples[{SampleKey{10, 0, kKernelIp, 0}, 3}]), 1u);
  EXPECT_EQ(p.records.malformed, 0u);
}

TEST(ProfileBuilder, RejectsAStackLongerThanItsRecord) {
  ProfileBuilder b;
  Records r;
  r.StackSample(SampleRec(10, 7, 0x401000, TPROF_SAMPLE_USER, 0), 0, {}, {0x401100});
  // Claim more frames than the record holds.
  auto* st = reinterpret_cast<tprof_rec_stack*>(
      const_cast<unsigned char*>(reinterpret_cast<const unsigned char*>(r.data())) +
      sizeof(tprof_rec_sample));
  st->nr_user = 2;
  EXPECT_EQ(b.AddRecords(r.data(), r.size()), 0u);
  EXPECT_EQ(b.profile().records.malformed, 1u);
}

TEST(ProfileBuilder, RejectsMalformedRecordsWithoutReadingPastThem) {
  ProfileBuilder b;
  tprof_rec_header hdr{TPROF_REC_SAMPLE, 0};
  EXPECT_EQ(b.AddRecord(&hdr, sizeof(hdr)), 0u) << "size 0";
  hdr.size = 12;
  EXPECT_EQ(b.AddRecord(&hdr, 16), 0u) << "size not a multiple of 8";
  hdr.size = 64;
  EXPECT_EQ(b.AddRecord(&hdr, sizeof(hdr)), 0u) << "size beyond the buffer";
  hdr.size = 16;
  uint64_t short_sample[2] = {};
  std::memcpy(short_sample, &hdr, sizeof(hdr));
  EXPECT_EQ(b.AddRecord(reinterpret_cast<tprof_rec_header*>(short_sample), 16), 0u)
      << "smaller than struct tprof_rec_sample";
  EXPECT_EQ(b.AddRecord(&hdr, 4), 0u) << "not even a header";
  EXPECT_EQ(b.AddRecord(nullptr, 64), 0u);
  // A truncated map record: the header promises more than the half holds.
  Records map;
  map.Map(1, 2, 0x1000, 0x2000, 0, "/bin/true");
  EXPECT_EQ(b.AddRecord(map.at(0), map.size() - 8), 0u);
  EXPECT_EQ(b.profile().records.malformed, 7u);
  EXPECT_TRUE(b.profile().samples.empty());
  EXPECT_TRUE(b.profile().mappings.empty());
}

TEST(ProfileBuilder, SkipsUnknownRecordTypesAndStopsAtMalformedOnes) {
  ProfileBuilder b;
  Records r;
  uint64_t future[3] = {};
  tprof_rec_header fh{99, sizeof(future)};
  std::memcpy(future, &fh, sizeof(fh));
  r.Add(SampleRec(1, 1, 0x10, TPROF_SAMPLE_USER)).Raw(future, sizeof(future));
  r.Add(SampleRec(1, 1, 0x10, TPROF_SAMPLE_USER));
  size_t good = r.size();
  tprof_rec_header bad{TPROF_REC_SAMPLE, 0};
  uint64_t bad_word = 0;
  std::memcpy(&bad_word, &bad, sizeof(bad));
  r.Raw(&bad_word, 8).Add(SampleRec(1, 1, 0x10, TPROF_SAMPLE_USER));
  EXPECT_EQ(b.AddRecords(r.data(), r.size()), good);
  EXPECT_EQ(b.profile().records.unknown, 1u);
  EXPECT_EQ(b.profile().records.malformed, 1u);
  EXPECT_EQ(b.profile().TotalSamples(), 2u) << "the sample after the bad record is not read";
}

TEST(ProfileBuilder, AcceptsLargerRecordsOfKnownTypes) {
  // A newer module may append fields: the known prefix is still read.
  ProfileBuilder b;
  uint64_t words[8] = {};
  auto s = SampleRec(3, 4, 0x99, TPROF_SAMPLE_USER);
  s.hdr.size = sizeof(words);
  std::memcpy(words, &s, sizeof(s));
  EXPECT_EQ(b.AddRecord(reinterpret_cast<tprof_rec_header*>(words), sizeof(words)), 64u);
  EXPECT_EQ(b.profile().TotalSamples(), 1u);
}

TEST(ProfileBuilder, KeepsNameHistoryAndForksInheritTheParentsName) {
  ProfileBuilder b;
  Records r;
  // Per-CPU buffers arrive out of time order: the exec comes first.
  r.Add(CommRec(11, TPROF_COMM_EXEC, "make", 0, 300));
  r.Add(CommRec(10, TPROF_COMM_EXISTING, "bash", 0, 100));
  r.Add(CommRec(11, TPROF_COMM_FORK, "", 10, 200));
  r.Add(CommRec(12, TPROF_COMM_FORK, "", 11, 400));  // fork of a fork, after exec
  r.Add(CommRec(13, TPROF_COMM_EXISTING, "exactly16chars!!"));  // no NUL in the record
  r.Add(ExitRec(11, 500));
  b.AddRecords(r.data(), r.size());
  Profile p = b.Finish();
  const tprof::ProcessInfo& child = p.processes[11];
  ASSERT_EQ(child.names.size(), 2u);
  EXPECT_EQ(child.names[0].name, "bash") << "an empty fork comm takes the parent's name";
  EXPECT_EQ(child.names[0].kind, TPROF_COMM_FORK);
  EXPECT_EQ(child.names[1].name, "make");
  EXPECT_EQ(child.name(), "make");
  EXPECT_EQ(child.NameAt(250), "bash");
  EXPECT_TRUE(child.exited);
  EXPECT_EQ(child.exit_time_ns, 500u);
  EXPECT_EQ(p.processes[12].name(), "make") << "the parent's name at the time of the fork";
  EXPECT_EQ(p.processes[13].name(), "exactly16chars!!");
  EXPECT_FALSE(p.processes[10].exited);
  EXPECT_EQ(p.ProcessDisplayName(0), "idle");
  EXPECT_EQ(p.ProcessDisplayName(999), "[unknown]");
}

TEST(ProfileBuilder, AReusedPidIsAliveAgainAfterItsFork) {
  ProfileBuilder b;
  Records r;
  r.Add(CommRec(20, TPROF_COMM_EXISTING, "old", 0, 1)).Add(ExitRec(20, 5));
  r.Add(CommRec(20, TPROF_COMM_FORK, "new", 1, 9));
  b.AddRecords(r.data(), r.size());
  Profile p = b.Finish();
  EXPECT_FALSE(p.processes[20].exited);
  EXPECT_EQ(p.processes[20].name(), "new");
}

TEST(ProfileBuilder, ListsMappingsPerSpaceSortedAndDeduplicated) {
  ProfileBuilder b;
  Records r;
  r.Map(5, 1, 0x7f0000, 0x7f8000, 0x2000, "/lib/libc.so.6");
  r.Map(5, 1, 0x400000, 0x401000, 0, "/usr/bin/app");
  r.Map(5, 1, 0x7f0000, 0x7f8000, 0x2000, "/lib/libc.so.6");  // again
  r.Map(5, 2, 0x400000, 0x401000, 0, "/usr/bin/other");       // after exec
  r.Map(5, 1, 0x8000, 0x9000, 0, std::string(300, 'x'));      // long path
  b.AddRecords(r.data(), r.size());
  Profile p = b.Finish();
  const auto& maps = p.mappings[{5, 1}];
  ASSERT_EQ(maps.size(), 3u);
  EXPECT_EQ(maps[0].path, std::string(300, 'x'));
  EXPECT_EQ(maps[1], (Mapping{0x400000, 0x401000, 0, "/usr/bin/app"}));
  EXPECT_EQ(maps[2], (Mapping{0x7f0000, 0x7f8000, 0x2000, "/lib/libc.so.6"}));
  EXPECT_EQ((p.mappings[{5, 2}].size()), 1u);
  EXPECT_EQ(p.records.maps, 5u);
}

TEST(ProfileBuilder, LostTotalsComeFromTheControlAreaWhenGiven) {
  ProfileBuilder b;
  Records r;
  r.Add(LostRec(3, 1)).Add(LostRec(2, 0));
  b.AddRecords(r.data(), r.size());
  EXPECT_EQ(b.profile().TotalLostSamples(), 5u);
  EXPECT_EQ(b.profile().TotalLostRecords(), 1u);
  // The control area also counts losses no later record reported.
  b.SetCpuTotals(0, 100, 4, 1);
  b.SetCpuTotals(1, 50, 3, 2);
  Profile p = b.Finish();
  EXPECT_EQ(p.TotalLostSamples(), 7u);
  EXPECT_EQ(p.TotalLostRecords(), 3u);
  EXPECT_EQ(p.lost_samples_in_records, 5u);
  EXPECT_EQ(p.cpus[1].samples_taken, 50u);
}

tprof_rec_sample At(tprof_rec_sample s, uint32_t tid, uint64_t time_ns) {
  s.tid = tid;
  s.time_ns = time_ns;
  return s;
}

TEST(ProfileBuilder, KeepsEachSamplesThreadCpuTimeBucketStackAndCaller) {
  ProfileBuilder b(tprof::ContextOptions{.granularity_ns = 1000});
  Records r;
  const auto user = SampleRec(10, 7, 0x401000, TPROF_SAMPLE_USER, 1, /*caller=*/0x402000);
  r.Add(At(user, 11, 5000)).Add(At(user, 11, 5999)).Add(At(user, 12, 5500));
  r.Add(At(user, 11, 7000));
  r.StackSample(At(SampleRec(10, 7, kKernelIp, 0, 0), 12, 6100), 0, {kKernelIp + 8}, {});
  EXPECT_EQ(b.AddRecords(r.data(), r.size()), r.size());
  Profile p = b.Finish();
  EXPECT_EQ(p.context_granularity_ns, 1000u);
  const SampleKey ukey{10, 7, 0x401000, TPROF_SAMPLE_USER};
  const SampleKey kkey{10, 0, kKernelIp, 0};
  using Ctx = tprof::SampleContextKey;
  const std::map<Ctx, uint64_t> want = {{Ctx{5, 1, 11, ukey, 0, 0x402000}, 2},
                                        {Ctx{5, 1, 12, ukey, 0, 0x402000}, 1},
                                        {Ctx{7, 1, 11, ukey, 0, 0x402000}, 1},
                                        {Ctx{6, 0, 12, kkey, 1, 0}, 1}};
  EXPECT_EQ(p.contexts, want);
  uint64_t total = 0;
  for (const auto& [key, count] : p.contexts) total += count;
  EXPECT_EQ(total, p.TotalSamples()) << "every sample has its context";
}

// Contexts wait in a pending list while recording (merged at 64 Ki
// entries, on profile() and in Finish()): whenever the merges happen, the
// table holds what the records say.
TEST(ProfileBuilder, CountsEveryContextAcrossTheMergesOfItsPendingList) {
  // Two samples a bucket, 70,000 buckets: more new contexts than the list holds.
  constexpr uint64_t kSamples = 140'000;
  using Ctx = tprof::SampleContextKey;
  std::map<Ctx, uint64_t> want;
  Records r;
  for (uint64_t i = 0; i < kSamples; ++i) {
    const uint64_t ip = 0x401000 + 4 * (i / 2 % 2), time = 500 * i;
    r.Add(At(SampleRec(10, 7, ip, TPROF_SAMPLE_USER, 1), 11, time));
    ++want[Ctx{time / 1000, 1, 11, {10, 7, ip, TPROF_SAMPLE_USER}, 0, 0}];
  }
  const tprof::ContextOptions options{.granularity_ns = 1000, .max_entries = size_t{1} << 20};
  ProfileBuilder at_end(options), midway(options);
  EXPECT_EQ(at_end.AddRecords(r.data(), r.size()), r.size());
  for (size_t off = 0, n = 0; off < r.size(); ++n) {
    off += midway.AddRecord(r.at(off), r.size() - off);
    if (n % 997 == 0) {
      EXPECT_EQ(midway.profile().records.samples, n + 1);  // merges now
    }
  }
  EXPECT_EQ(at_end.profile().contexts, want) << "profile() shows the pending contexts";
  const Profile a = at_end.Finish(), b = midway.Finish();
  EXPECT_EQ(a.contexts, want);
  EXPECT_EQ(b.contexts, want);
  EXPECT_EQ(a.TotalSamples(), kSamples);
}

TEST(ProfileBuilder, DoublesTheGranularityWhenTheContextTablePassesItsBound) {
  ProfileBuilder b(tprof::ContextOptions{.granularity_ns = 1000, .max_entries = 4});
  Records r;
  for (uint64_t t = 0; t < 8; ++t) r.Add(At(SampleRec(10, 7, 0x401000, TPROF_SAMPLE_USER), 10, t * 1000));
  b.AddRecords(r.data(), r.size());
  Profile p = b.Finish();
  EXPECT_EQ(p.context_granularity_ns, 2000u) << "8 buckets of 1 us did not fit 4 entries";
  ASSERT_EQ(p.contexts.size(), 4u);
  for (const auto& [key, count] : p.contexts) EXPECT_EQ(count, 2u) << "bucket " << key.bucket;

  // Keys that differ in more than time stop the doubling once one bucket holds them all.
  ProfileBuilder wide(tprof::ContextOptions{.granularity_ns = 1000, .max_entries = 2});
  Records w;
  for (uint32_t tid = 1; tid <= 3; ++tid) w.Add(At(SampleRec(10, 7, 0x401000, TPROF_SAMPLE_USER), tid, 500));
  wide.AddRecords(w.data(), w.size());
  EXPECT_EQ(wide.Finish().contexts.size(), 3u);
}

TEST(ProfileBuilder, KeepsNoContextAtGranularityZero) {
  ProfileBuilder b(tprof::ContextOptions{.granularity_ns = 0});
  Records r;
  r.Add(SampleRec(10, 7, 0x401000, TPROF_SAMPLE_USER));
  b.AddRecords(r.data(), r.size());
  Profile p = b.Finish();
  EXPECT_EQ(p.context_granularity_ns, 0u);
  EXPECT_TRUE(p.contexts.empty());
  EXPECT_EQ(p.TotalSamples(), 1u);
  EXPECT_EQ(tprof::SerializeProfile(p).find("\nctx"), std::string::npos);
}

// Records as the kernel writes them, or each padded by 8 bytes, which the
// reduction ignores (AcceptsLargerRecordsOfKnownTypes) but which keeps
// every record from the builder's cache of recent records (recent_samples.h).
Records RecentStream(bool padded) {
  std::vector<uint64_t> deep;  // a leaf RA and 24 frames
  for (uint64_t i = 0; i < 25; ++i) deep.push_back(0x401000 + 0x10 * i);
  std::vector<uint64_t> deep_other_root = deep;  // beyond the frames the cache indexes by
  deep_other_root[20] += 8;
  std::vector<uint64_t> other_caller = deep;
  other_caller[1] += 8;
  Records r;
  uint64_t seed = 12345;
  for (uint64_t i = 0; i < 4000; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t time = 1'000'000 + i * 300;
    const uint32_t cpu = (seed >> 40) % 2, tid = 10 + (seed >> 42) % 2;
    auto user = At(SampleRec(10, 7, 0x401000 + 4 * ((seed >> 44) % 3), TPROF_SAMPLE_USER, cpu), tid, time);
    auto kernel = At(SampleRec(10, 7, kKernelIp, 0, cpu), tid, time);
    tprof_rec_sample s{};
    uint32_t stack_flags = TPROF_STACK_LEAF_RA;
    std::vector<uint64_t> kframes, uframes;
    bool with_stack = true;
    switch ((seed >> 50) % 9) {
      case 0: s = user; uframes = deep; break;
      case 1: s = user; uframes = deep_other_root; break;
      case 2: s = user; uframes = other_caller; break;
      case 3: s = user; with_stack = false; break;
      case 4: s = At(SampleRec(10, 7, 0x401000, TPROF_SAMPLE_USER, cpu, 0x402000), tid, time); break;
      case 5:
        s = kernel;
        stack_flags |= TPROF_STACK_USER_IP;
        kframes = {kKernelIp + 0x40, kKernelIp + 0x80};
        uframes = deep;
        uframes.insert(uframes.begin(), 0x401234);
        break;
      case 6: s = At(SampleRec(0, 0, kKernelIp, TPROF_SAMPLE_IDLE, cpu), 0, time); with_stack = false; break;
      case 7: s = At(SampleRec(10, 0, 0, TPROF_SAMPLE_HIDDEN, cpu), tid, time); stack_flags = 0; break;
      default: s = user; stack_flags = TPROF_STACK_TRUNCATED; uframes = {deep[0]}; break;
    }
    tprof_rec_stack st{};
    st.nr_kernel = static_cast<uint16_t>(kframes.size());
    st.nr_user = static_cast<uint16_t>(uframes.size());
    st.flags = stack_flags;
    if (with_stack) s.flags |= TPROF_SAMPLE_STACK;
    const size_t frames = kframes.size() + uframes.size();
    s.hdr.size = static_cast<uint32_t>(sizeof(s) + (with_stack ? sizeof(st) + 8 * frames : 0) +
                                       (padded ? 8 : 0));
    r.Add(s);
    if (with_stack) {
      r.Add(st);
      for (uint64_t f : kframes) r.Add(f);
      for (uint64_t f : uframes) r.Add(f);
    }
    if (padded) r.Add(uint64_t{0xdead});
  }
  return r;
}

TEST(ProfileBuilder, ARepeatedRecordAddsWhatItsFirstOccurrenceAdded) {
  // Small context buckets and table: the table is rebuilt several times
  // while records repeat; the granularity changes once by hand too.
  const tprof::ContextOptions options{.granularity_ns = 1000, .max_entries = 64};
  auto reduce = [&](bool padded) {
    const Records r = RecentStream(padded);
    ProfileBuilder first(options);
    size_t off = 0, n = 0;
    while (off < r.size() && n < 1500) off += first.AddRecord(r.at(off), r.size() - off), ++n;
    ProfileBuilder b = std::move(first);  // the maps' nodes stay where they were
    while (off < r.size() && n < 2500) off += b.AddRecord(r.at(off), r.size() - off), ++n;
    b.SetContextOptions({.granularity_ns = 4000, .max_entries = 64});
    EXPECT_EQ(b.AddRecords(r.at(off), r.size() - off), r.size() - off);
    return b.Finish();
  };
  const Profile cached = reduce(false), full = reduce(true);
  EXPECT_EQ(full.TotalSamples(), 4000u);
  EXPECT_EQ(full.stacks.size(), 7u) << "deep_other_root and other_caller are stacks of their own";
  EXPECT_GT(full.context_granularity_ns, 4000u) << "the context table was rebuilt at its bound";
  EXPECT_EQ(cached.samples, full.samples);
  EXPECT_EQ(cached.caller_edges, full.caller_edges);
  EXPECT_EQ(cached.stacks, full.stacks);
  EXPECT_EQ(cached.stack_samples, full.stack_samples);
  EXPECT_EQ(cached.context_granularity_ns, full.context_granularity_ns);
  EXPECT_EQ(cached.contexts, full.contexts);
  EXPECT_EQ(cached.cpus, full.cpus);
  EXPECT_EQ(cached.records, full.records);
  EXPECT_TRUE(cached == full);
}

Profile RichProfile() {
  ProfileBuilder b;
  Records r;
  r.Add(CommRec(10, TPROF_COMM_EXISTING, "we ird\t%n", 0, 1));
  r.Add(CommRec(11, TPROF_COMM_FORK, "", 10, 2)).Add(ExitRec(11, 3));
  r.Map(10, 7, 0x400000, 0x401000, 0x1000, "/path with spaces/a%b\nc");
  r.Add(SampleRec(10, 7, 0x400010, TPROF_SAMPLE_USER, 2, 0x400020, 1000));
  r.Add(SampleRec(10, 7, kKernelIp, TPROF_SAMPLE_HIDDEN, 0, 0, 2000));
  r.StackSample(SampleRec(10, 7, kKernelIp, 0, 1), TPROF_STACK_USER_IP | TPROF_STACK_LEAF_RA,
                {kKernelIp + 8}, {0x400010, 0x400030, 0x400040});
  // The same sample without a stack: its sample line (1.7) counts this one.
  r.Add(SampleRec(10, 7, kKernelIp, 0, 1));
  r.Add(LostRec(1, 2));
  b.AddRecords(r.data(), r.size());
  b.SetCpuTotals(2, 10, 1, 0);
  b.SetAttribute("command", "sh -c 'a\tb'");
  Profile p = b.Finish();
  p.kernel_symbols.available = true;
  p.kernel_symbols.symbols = {{0xffffffff81000000, 'T', "_stext", ""},
                              {0xffffffffc0001000, 't', "ext4_read", "ext4"}};
  p.jit_symbols[10] = {{0x7000, 0x10, "LazyCompile:*run app.js:1"}};
  p.build_ids["/usr/bin/prog\twith tab"] = "0123456789abcdef";
  p.vdso_image = std::string("\x7f" "ELF\0\x01\xff\n\t%", 10);  // every byte survives
  return p;
}

TEST(ProfileFile, RoundTripsEveryTable) {
  Profile p = RichProfile();
  auto back = tprof::ParseProfile(tprof::SerializeProfile(p), "test");
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_TRUE(*back == p) << tprof::SerializeProfile(*back);

  TempDir dir;
  std::string path = dir.File("tprof.data");
  ASSERT_TRUE(tprof::WriteProfile(p, path));
  auto read = tprof::ReadProfile(path);
  ASSERT_TRUE(read) << read.error().message();
  EXPECT_TRUE(*read == p);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(getpid())));
}

// Files are one gzip member of the text; plain text files (what tprof
// wrote before) are read as ever; a damaged stream is refused.
TEST(ProfileFile, FilesAreGzippedTextAndPlainTextIsStillRead) {
  Profile p = RichProfile();
  TempDir dir;
  const std::string path = dir.File("tprof.data");
  ASSERT_TRUE(tprof::WriteProfile(p, path));
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(uint8_t(bytes[0]), 0x1f);
  EXPECT_EQ(uint8_t(bytes[1]), 0x8b);
  auto text = tprof::Gunzip(bytes, tprof::kMaxProfileTextBytes);
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, tprof::SerializeProfile(p));
  EXPECT_LT(bytes.size(), text->size());

  auto plain = tprof::ReadProfile(dir.Write("plain.data", *text));
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_TRUE(*plain == p);

  for (size_t cut : {bytes.size() / 2, bytes.size() - 4}) {
    auto r = tprof::ReadProfile(dir.Write("cut.data", bytes.substr(0, cut)));
    ASSERT_FALSE(r) << "cut at " << cut;
    EXPECT_EQ(r.error().code().value(), EBADMSG) << r.error().message();
    EXPECT_NE(r.error().message().find("cut.data"), std::string::npos) << r.error().message();
  }
}

TEST(ProfileFile, ReadsVersion10FilesAndChecksTheStackTable) {
  auto old = tprof::ParseProfile("tprof-profile 1 0\nsample\t5\t0\t10\t1\t3\nend\n", "old.data");
  ASSERT_TRUE(old) << old.error().message();
  EXPECT_EQ(old->TotalSamples(), 3u);
  EXPECT_TRUE(old->stacks.empty());
  // Stack ids come in order, and a sample names an existing one.
  for (const char* bad : {"tprof-profile 1 1\nstack\t2\t0\t0\t0\t1\t10\nend\n",
                          "tprof-profile 1 1\nstack\t1\t0\t0\t0\t2\t10\nend\n",
                          "tprof-profile 1 1\nssample\t5\t0\t10\t1\t1\t3\nend\n"}) {
    auto r = tprof::ParseProfile(bad, "bad.data");
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code().value(), EBADMSG);
  }
}

TEST(ProfileFile, CarriesBuildIdsAndTheVdsoGzipped) {
  std::string text = tprof::SerializeProfile(RichProfile());
  EXPECT_EQ(text.rfind("tprof-profile 1 9\n", 0), 0u) << text;
  EXPECT_NE(text.find("\nvdso-gz\t10\t"), std::string::npos) << text;
  EXPECT_EQ(text.find("\nvdso\t"), std::string::npos) << "1.4 writes no hex image: " << text;
  EXPECT_NE(text.find("\nbuildid\t/usr/bin/prog%09with tab\t0123456789abcdef\n"),
            std::string::npos)
      << text;
}

// The point of 1.4: a real vDSO image (this process's) takes fewer
// characters than it has bytes, under half of 1.3's hex (2 a byte), and
// comes back byte for byte.
TEST(ProfileFile, StoresARealVdsoInFewerCharactersThanItHasBytes) {
  Profile p;
  p.vdso_image = tprof::VdsoImage();
  ASSERT_GT(p.vdso_image.size(), 1000u) << "this process has a vDSO";
  const std::string text = tprof::SerializeProfile(p);
  const size_t at = text.find("\nvdso-gz\t");
  ASSERT_NE(at, std::string::npos) << text.substr(0, 200);
  const size_t line = text.find('\n', at + 1) - at;
  EXPECT_LT(line, p.vdso_image.size())
      << "the vdso-gz line is " << line << " bytes for a " << p.vdso_image.size() << "-byte image";
  auto back = tprof::ParseProfile(text, "vdso");
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_TRUE(back->vdso_image == p.vdso_image);
}

// A 1.3 file (what tprofctl wrote until 1.4) keeps its vDSO in hex.
TEST(ProfileFile, Reads13FilesWithTheVdsoInHex) {
  auto old = tprof::ParseProfile(
      "tprof-profile 1 3\nbuildid\t/bin/x\tab12\nvdso\t7f454c460001ff0a0925\nend\n", "old.data");
  ASSERT_TRUE(old) << old.error().message();
  EXPECT_EQ(old->vdso_image, std::string("\x7f" "ELF\0\x01\xff\n\t%", 10));
  EXPECT_EQ(old->build_ids.at("/bin/x"), "ab12");
  // A whole 1.3 file: today's text with the header and the vDSO line as
  // 1.3 wrote them reads as the same profile.
  const Profile rich = RichProfile();
  std::string text = tprof::SerializeProfile(rich);
  ASSERT_EQ(text.rfind("tprof-profile 1 9\n", 0), 0u);
  text.replace(0, std::strlen("tprof-profile 1 9"), "tprof-profile 1 3");
  const size_t crc = text.find("\ncrc32\t");  // 1.3 had no checksum
  ASSERT_NE(crc, std::string::npos);
  text.erase(crc + 1, text.find('\n', crc + 1) - crc);
  const size_t at = text.find("\nvdso-gz\t");
  ASSERT_NE(at, std::string::npos);
  text.replace(at + 1, text.find('\n', at + 1) - at - 1, "vdso\t7f454c460001ff0a0925");
  auto read = tprof::ParseProfile(text, "1.3");
  ASSERT_TRUE(read) << read.error().message();
  // Before 1.7 a sample line counted every sample: the lines 1.7 wrote
  // (the samples without a stack) are then all there is.
  Profile without_stacks = rich;
  for (const auto& [k, count] : rich.stack_samples)
    if ((without_stacks.samples[k.sample] -= count) == 0) without_stacks.samples.erase(k.sample);
  EXPECT_TRUE(*read == without_stacks) << text;
  for (const char* bad : {"tprof-profile 1 2\nvdso\t7f4\nend\n", "tprof-profile 1 2\nvdso\tzz\nend\n"}) {
    auto r = tprof::ParseProfile(bad, "bad.data");
    EXPECT_FALSE(r) << "odd length or not hex: " << bad;
  }
}

TEST(ProfileFile, RefusesACorruptVdsoGzLine) {
  Profile p;
  p.vdso_image = std::string(3000, 'x') + "tail";
  const std::string text = tprof::SerializeProfile(p);
  const size_t at = text.find("\nvdso-gz\t3004\t");
  ASSERT_NE(at, std::string::npos) << text;
  const size_t data = at + std::strlen("\nvdso-gz\t3004\t");
  const size_t eol = text.find('\n', data);
  const std::string b64 = text.substr(data, eol - data);
  auto with = [&](const std::string& size, const std::string& payload) {
    return "tprof-profile 1 4\nvdso-gz\t" + size + "\t" + payload + "\nend\n";
  };
  ASSERT_TRUE(tprof::ParseProfile(with("3004", b64), "good"));
  std::string flipped = b64;
  flipped[flipped.size() / 2] = flipped[flipped.size() / 2] == 'A' ? 'B' : 'A';
  for (const std::string& bad :
       {with("3003", b64), with("3005", b64),  // the size is checked
        with("3004", b64.substr(0, b64.size() - 4)),  // cut short
        with("3004", flipped),                        // the CRC catches it
        with("3004", b64 + "=")}) {                   // not base64
    auto r = tprof::ParseProfile(bad, "bad.data");
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code().value(), EBADMSG);
  }
}

// Counting windows (1.6): each window's info and its nonzero cells, so that
// `tprofctl window show` needs only the profile.
TEST(ProfileFile, KeepsTheSessionsWindows) {
  Profile p;
  tprof::WindowCounts kernel, process;
  kernel.info.kind = TPROF_WINDOW_KERNEL;
  kernel.info.start = 0xffffffff80000000;
  kernel.info.length = 0x2000;
  kernel.info.block_bytes = 0x1000;
  kernel.info.nr_cells = 2;
  kernel.info.cell_bytes = 4;
  kernel.cells = {0, 0};
  process.info.id = 1;
  process.info.kind = TPROF_WINDOW_PROCESS;
  process.info.pid = 42;
  process.info.start = 0x401000;
  process.info.length = 256;
  process.info.block_bytes = 64;
  process.info.nr_cells = 4;
  process.info.cell_bytes = 4;
  process.info.nr_procs = 1;
  process.info.in_range = 9;
  process.info.out_of_range = 3;
  process.info.wait = 2;
  process.cells = {0, 7, 0, 2};
  p.windows = {kernel, process};
  const std::string text = tprof::SerializeProfile(p);
  EXPECT_NE(text.find("\nwindow\t1\t2\t42\t0\t401000\t256\t64\t0\t4\t4\t1\t9\t3\t2\t0\t1:7\t3:2\n"),
            std::string::npos)
      << text;
  auto back = tprof::ParseProfile(text, "windows.data");
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_TRUE(back->windows == p.windows);
  // A cell past the window, a count past 32 bits, more cells than a session
  // may hold, a missing field: refused.
  const std::string fields = "window\t1\t2\t42\t0\t401000\t256\t64\t0\t";
  for (const std::string& line :
       {fields + "4\t4\t1\t9\t3\t2\t0\t4:1", fields + "4\t4\t1\t9\t3\t2\t0\t1:4294967296",
        fields + "4194305\t4\t1\t9\t3\t2\t0", fields + "4\t4\t1\t9\t3\t2"}) {
    auto r = tprof::ParseProfile("tprof-profile 1 6\n" + line + "\nend\n", "bad.data");
    ASSERT_FALSE(r) << line;
    EXPECT_EQ(r.error().code().value(), EBADMSG);
  }
}

TEST(ProfileFile, StoresTheContextTableCompactlyAndReads11FilesWithoutIt) {
  Profile p = RichProfile();
  ASSERT_EQ(p.context_granularity_ns, tprof::kDefaultContextGranularityNs);
  ASSERT_EQ(p.contexts.size(), 4u);
  const std::string text = tprof::SerializeProfile(p);
  EXPECT_EQ(text.rfind("tprof-profile 1 9\n", 0), 0u) << text;
  // 1.7: the samples per stack and sample lines are the first sites; a csite line
  // only for the site with a caller (neither kind of line has one).
  EXPECT_NE(text.find("\ncontext\t10000000\t1\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("\ncsite\t1\t"), std::string::npos) << text;
  EXPECT_NE(text.find("\ncsite\t5\t"), std::string::npos) << text;
  EXPECT_EQ(text.find("\ncsite\t6\t"), std::string::npos) << text;
  // Two samples of one thread on one CPU in one bucket share a ctx line.
  Profile two = p;
  auto first = two.contexts.begin()->first;
  first.sample.ip += 1;
  two.contexts[first] = 3;
  const std::string text2 = tprof::SerializeProfile(two);
  const std::string line = "\ncx\t" + std::to_string(first.bucket) + "\t" +
                           std::to_string(first.cpu) + "\t" + std::to_string(first.tid) + "\t";
  const size_t at = text2.find(line);
  ASSERT_NE(at, std::string::npos) << text2;
  EXPECT_NE(text2.substr(at + 1, text2.find('\n', at + 1) - at - 1).find(":3"), std::string::npos)
      << text2;
  auto back = tprof::ParseProfile(text2, "two");
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->contexts, two.contexts);

  auto old = tprof::ParseProfile("tprof-profile 1 1\nsample\t5\t0\t10\t1\t3\nend\n", "1.1");
  ASSERT_TRUE(old) << old.error().message();
  EXPECT_EQ(old->context_granularity_ns, 0u);
  EXPECT_TRUE(old->contexts.empty());
  for (const char* bad : {"tprof-profile 1 2\ncontext\t10\nctx\t1\t0\t5\t1\nend\n",
                          "tprof-profile 1 2\ncsite\t2\t5\t0\t10\t1\t0\t0\nend\n",
                          "tprof-profile 1 2\ncsite\t1\t5\t0\t10\t1\t3\t0\nend\n",
                          "tprof-profile 1 2\ncsite\t1\t5\t0\t10\t1\t0\t0\n"
                          "ctx\t1\t0\t5\t1:x\nend\n"}) {
    auto r = tprof::ParseProfile(bad, "bad.data");
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code().value(), EBADMSG) << bad;
  }
}

// A profile's stacks, samples per stack and context with each stack id
// replaced by its stack: what must survive a file, which renumbers stacks.
struct StacksResolved {
  std::map<std::pair<SampleKey, tprof::RawStack>, uint64_t> samples;
  std::map<std::pair<tprof::SampleContextKey, tprof::RawStack>, uint64_t> contexts;
  bool operator==(const StacksResolved&) const = default;
};
StacksResolved Resolve(const Profile& p) {
  StacksResolved r;
  auto stack = [&](uint32_t id) { return id ? p.stacks.at(id - 1) : tprof::RawStack{}; };
  for (const auto& [k, count] : p.stack_samples) r.samples[{k.sample, stack(k.stack)}] += count;
  for (const auto& [k, count] : p.contexts) {
    tprof::SampleContextKey key = k;
    key.stack = 0;
    r.contexts[{key, stack(k.stack)}] += count;
  }
  return r;
}

// 1.8: each address once in a table, stacks sorted from their outermost
// frame and sharing the previous one's, samples per stack grouped; the
// same profile as a 1.7 file of the same tables reads.
TEST(ProfileFile, WritesStacksFrontCodedOverAnAddressTable) {
  ProfileBuilder b;
  Records r;
  const auto user = SampleRec(10, 7, 0x401000, TPROF_SAMPLE_USER, 0, 0, 100);
  // Interned in this order; the file sorts them by main's frame first.
  r.StackSample(user, TPROF_STACK_USER_IP, {}, {0x401000, 0x402000, 0x409000});
  r.StackSample(user, TPROF_STACK_USER_IP, {}, {0x401000, 0x403000, 0x402000, 0x409000});
  r.StackSample(SampleRec(10, 7, 0x401010, TPROF_SAMPLE_USER, 1, 0, 20'000'000),
                TPROF_STACK_USER_IP, {}, {0x401010, 0x402000, 0x409000});
  r.StackSample(SampleRec(10, 7, kKernelIp, 0, 1, 0, 300), TPROF_STACK_USER_IP,
                {kKernelIp + 0x40, kKernelIp + 0x80}, {0x401010, 0x402000, 0x409000});
  r.StackSample(SampleRec(12, 9, 0x401000, TPROF_SAMPLE_USER, 0, 0, 400), TPROF_STACK_USER_IP, {},
                {0x401000, 0x402000, 0x408000});
  b.AddRecords(r.data(), r.size());
  Profile p = b.Finish();
  ASSERT_EQ(p.stacks.size(), 5u);
  const std::string text = tprof::SerializeProfile(p);
  EXPECT_EQ(text.find("\nstack\t"), std::string::npos) << text;
  EXPECT_EQ(text.find("\nssample\t"), std::string::npos) << text;
  EXPECT_EQ(text.find("402000"), std::string::npos) << "an address is only in the table: " << text;
  EXPECT_NE(text.find("\naddr\t"), std::string::npos) << text;
  // Sorted from the outermost frame: 0x408000's stack first; then the
  // three of 0x409000 -> 0x402000 follow each other, sharing two frames.
  EXPECT_NE(text.find("\nstk\t1\t9\t0\t3\t0\t"), std::string::npos) << text;
  EXPECT_NE(text.find("\nstk\t1\t7\t0\t3\t2\t"), std::string::npos) << text;
  EXPECT_NE(text.find("\nstk\t1\t7\t2\t3\t3\t"), std::string::npos) << "kernel frames after the user's: " << text;
  auto back = tprof::ParseProfile(text, "1.8");
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(Resolve(*back), Resolve(p)) << text;
  EXPECT_EQ(back->samples, p.samples);
  EXPECT_EQ(back->TotalSamples(), 5u);
  // The stacks in the file's order: written again, the same text.
  EXPECT_EQ(tprof::SerializeProfile(*back), text);

  // The same tables as 1.7 wrote them.
  std::string old = "tprof-profile 1 7\n";
  for (size_t i = 0; i < p.stacks.size(); ++i) {
    const tprof::RawStack& s = p.stacks[i];
    char head[128];
    std::snprintf(head, sizeof(head), "stack\t%zu\t%x\t%llx\t%zu\t%zu", i + 1, s.flags,
                  static_cast<unsigned long long>(s.space_id), s.kernel.size(), s.user.size());
    old += head;
    for (uint64_t a : s.kernel) old += "\t" + (std::ostringstream() << std::hex << a).str();
    for (uint64_t a : s.user) old += "\t" + (std::ostringstream() << std::hex << a).str();
    old += "\n";
  }
  for (const auto& [k, count] : p.stack_samples) {
    char line[160];
    std::snprintf(line, sizeof(line), "ssample\t%u\t%llx\t%llx\t%x\t%u\t%llu\n", k.sample.pid,
                  static_cast<unsigned long long>(k.sample.space_id),
                  static_cast<unsigned long long>(k.sample.ip), k.sample.flags, k.stack,
                  static_cast<unsigned long long>(count));
    old += line;
  }
  old += "ksym\tffffffff81000000\tT\t_stext\t\nend\n";
  auto v17 = tprof::ParseProfile(old, "1.7");
  ASSERT_TRUE(v17) << v17.error().message();
  EXPECT_EQ(Resolve(*v17).samples, Resolve(p).samples);
  EXPECT_EQ(v17->kernel_symbols.symbols.at(0).address, 0xffffffff81000000u);

  // Malformed compact lines are refused.
  for (const char* bad : {"tprof-profile 1 8\naddr\t10\nstk\t0\t7\t0\t1\t0\t1\nend\n",
                          "tprof-profile 1 8\naddr\t10\nstk\t0\t7\t0\t2\t1\t0\nend\n",
                          "tprof-profile 1 8\naddr\t10\nstk\t0\t7\t0\t2\t0\t0\nend\n",
                          "tprof-profile 1 8\naddr\t10\nstk\t0\t7\t0\t1\t0\t0\nss\t0\t1\t1\nend\n",
                          "tprof-profile 1 8\naddr\t10\nstk\t0\t7\t0\t1\t0\t0\nsskey\t1\t7\t1\n"
                          "ss\t1\t1\t1\nend\n",
                          "tprof-profile 1 8\naddr\t10\nstk\t0\t7\t0\t1\t0\t0\nsskey\t1\t7\t1\n"
                          "ss\t0\t2\t1\nend\n"}) {
    auto bad_read = tprof::ParseProfile(bad, "bad.data");
    EXPECT_FALSE(bad_read) << bad;
  }
}

TEST(ProfileFile, RefusesAnotherMajorVersion) {
  auto r = tprof::ParseProfile("tprof-profile 2 0\nend\n", "new.data");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code().value(), EPROTO);
  EXPECT_NE(r.error().message().find("version 2.0"), std::string::npos) << r.error().message();
}

TEST(ProfileFile, ANewerMinorVersionIsReadSkippingWhatItAdded) {
  auto r = tprof::ParseProfile(
      "tprof-profile 1 9\n# comment\nfuture-table\t1\t2\nsample\t5\t0\tff\t1\t42\textra\nend\n",
      "newer.data");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((r->samples[{5, 0, 0xff, 1}]), 42u);
}

TEST(ProfileFile, RejectsFilesThatAreNotProfilesOrAreCutShort) {
  for (const char* text : {"", "\x7f" "ELF", "tprof-profile one two\n", "perf-file 1 0\nend\n"}) {
    auto r = tprof::ParseProfile(text, "x");
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().code().value(), EBADMSG) << text;
  }
  std::string whole = tprof::SerializeProfile(RichProfile());
  auto cut = tprof::ParseProfile(whole.substr(0, whole.size() / 2), "cut.data");
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().message().find("cut short"), std::string::npos);
  auto bad = tprof::ParseProfile("tprof-profile 1 0\nsample\t5\tzz\t1\t1\t1\nend\n", "bad.data");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("line 2"), std::string::npos) << bad.error().message();
}

// 1.5: a checksum of the bytes before it. A count changed by one digit, a
// header edited, a line deleted: refused, naming the checksum; the same
// file without its crc32 line (as before 1.5) reads unchecked. Bad lines
// are quoted escaped, never as raw bytes to a terminal.
TEST(ProfileFile, RefusesAFileWhoseBytesChangedAfterWriting) {
  const std::string whole = tprof::SerializeProfile(RichProfile());
  ASSERT_TRUE(tprof::ParseProfile(whole, "good"));
  const size_t sample = whole.find("\nsample\t");
  ASSERT_NE(sample, std::string::npos) << whole;
  const size_t count = whole.find('\n', sample + 1) - 1;  // the count's last digit
  std::string edited = whole;
  edited[count] = edited[count] == '9' ? '8' : static_cast<char>(edited[count] + 1);
  std::string header = whole;
  const size_t records = whole.find("\nrecords\t") + 9;  // its SAMPLES field
  header[records] = header[records] == '9' ? '8' : '9';
  std::string deleted = whole;  // a line whose loss leaves the rest readable
  const size_t lost = whole.find("\nlost\t");
  ASSERT_NE(lost, std::string::npos);
  deleted.erase(lost + 1, whole.find('\n', lost + 1) - lost);
  for (const std::string& bad : {edited, header, deleted}) {
    auto r = tprof::ParseProfile(bad, "bad.data");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code().value(), EBADMSG);
    EXPECT_NE(r.error().message().find("checksum"), std::string::npos) << r.error().message();
  }
  const size_t crc = edited.find("\ncrc32\t");
  ASSERT_NE(crc, std::string::npos);
  std::string unchecked = edited;
  unchecked.erase(crc + 1, edited.find('\n', crc + 1) - crc);
  EXPECT_TRUE(tprof::ParseProfile(unchecked, "unchecked")) << "no crc32 line: read as before 1.5";
  std::string after = whole;
  after.insert(after.size() - 4, "attr\tlate\tx\n");  // before `end`
  auto late = tprof::ParseProfile(after, "late.data");
  ASSERT_FALSE(late);
  EXPECT_NE(late.error().message().find("after the checksum"), std::string::npos)
      << late.error().message();

  auto binary =
      tprof::ParseProfile(std::string("tprof-profile 1 0\nsample\t\x1b[31m\xff\0\t1\nend\n", 39),
                          "binary.data");
  ASSERT_FALSE(binary);
  const std::string& message = binary.error().message();
  EXPECT_NE(message.find("`sample\\x09\\x1b[31m\\xff\\x00\\x091`"), std::string::npos) << message;
  for (char c : message) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "a raw byte in: " << message;
}

// ENOENT and the path; how to record one is tprofctl's hint (hints.cc).
TEST(ProfileFile, AMissingFileIsEnoentNamingThePath) {
  TempDir dir;
  auto r = tprof::ReadProfile(dir.File("tprof.data"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code().value(), ENOENT);
  EXPECT_NE(r.error().message().find(dir.File("tprof.data") + " not found"), std::string::npos)
      << r.error().message();
  EXPECT_EQ(r.error().message().find("tprofctl"), std::string::npos) << r.error().message();
}

TEST(Kallsyms, ReadsTextSymbolsWithModules) {
  TempDir dir;
  std::string path = dir.Write("kallsyms",
                               "ffffffff81000000 T _stext\n"
                               "ffffffff81000100 t helper\n"
                               "ffffffff82000000 D some_data\n"
                               "ffffffff82000100 b bss_thing\n"
                               "ffffffff81000200 W weak_fn\n"
                               "ffffffffc0002000 t ext4_write\t[ext4]\n"
                               "ffffffffc0001000 T ext4_read\t[ext4]\n"
                               "garbage line\n");
  auto k = tprof::ReadKallsyms(path);
  ASSERT_TRUE(k) << k.error().message();
  EXPECT_TRUE(k->available);
  ASSERT_EQ(k->symbols.size(), 5u) << "data and bss symbols are not functions";
  EXPECT_EQ(k->symbols[0].name, "_stext");
  EXPECT_EQ(k->symbols[2].name, "weak_fn");
  EXPECT_EQ(k->symbols[3].name, "ext4_read") << "sorted by address";
  EXPECT_EQ(k->symbols[3].module, "ext4");
  EXPECT_EQ(k->symbols[0].module, "");
}

TEST(Kallsyms, ZeroAddressesMeanUnavailable) {
  TempDir dir;
  auto k = tprof::ReadKallsyms(dir.Write("kallsyms", "0000000000000000 T _stext\n"
                                                     "0000000000000000 t f\t[mod]\n"));
  ASSERT_TRUE(k);
  EXPECT_FALSE(k->available);
  EXPECT_TRUE(k->symbols.empty());
  EXPECT_NE(k->note.find("kptr_restrict"), std::string::npos);
  EXPECT_FALSE(tprof::ReadKallsyms(dir.File("missing")));
}

TEST(PerfMap, ParsesHexLinesWithNamesContainingSpaces) {
  TempDir dir;
  auto m = tprof::ReadPerfMap(dir.Write("perf-1.map",
                                        "7f00a000 40 LazyCompile:*foo bar.js:3\n"
                                        "0x1000 0x10 stub\n"
                                        "nonsense\n"
                                        "2000 0 empty\n"
                                        "3000 10\n"));
  ASSERT_TRUE(m) << m.error().message();
  ASSERT_EQ(m->size(), 2u);
  EXPECT_EQ((*m)[0], (tprof::JitSymbol{0x1000, 0x10, "stub"}));
  EXPECT_EQ((*m)[1], (tprof::JitSymbol{0x7f00a000, 0x40, "LazyCompile:*foo bar.js:3"}));
}

TEST(Snapshot, CopiesPerfMapsOfSampledPidsAndPrunesKernelSymbols) {
  TempDir dir;
  ProfileBuilder b;
  Records r;
  r.Add(SampleRec(42, 1, 0x5000, TPROF_SAMPLE_USER));
  r.Add(SampleRec(43, 1, 0x5000, TPROF_SAMPLE_USER));
  r.Add(SampleRec(42, 1, 0xffffffff81000150, 0));
  b.AddRecords(r.data(), r.size());
  Profile p = b.Finish();
  dir.Write("perf-42.map", "5000 100 jitted\n");
  tprof::SnapshotOptions opt;
  opt.perf_map_dir = dir.path();
  opt.kallsyms_path = dir.Write("kallsyms",
                                "ffffffff81000000 T _stext\n"
                                "ffffffff81000100 t hit\n"
                                "ffffffff81000200 t after_hit\n"
                                "ffffffff81000300 t unrelated\n");
  tprof::SnapshotSystemState(&p, opt);
  ASSERT_EQ(p.jit_symbols.size(), 1u);
  EXPECT_EQ(p.jit_symbols[42][0].name, "jitted");
  ASSERT_TRUE(p.kernel_symbols.available);
  ASSERT_EQ(p.kernel_symbols.symbols.size(), 2u);
  EXPECT_EQ(p.kernel_symbols.symbols[0].name, "hit");
  EXPECT_EQ(p.kernel_symbols.symbols[1].name, "after_hit") << "bounds the hit symbol";

  // Without kernel symbols (record --continuous read them at start): the
  // profile's stay, the perf maps are read again.
  opt.kallsyms_path = dir.File("no-such-kallsyms");
  opt.kernel_symbols = false;
  p.jit_symbols.clear();
  tprof::SnapshotSystemState(&p, opt);
  EXPECT_TRUE(p.kernel_symbols.available);
  EXPECT_EQ(p.kernel_symbols.symbols.size(), 2u);
  EXPECT_EQ(p.jit_symbols.size(), 1u);

  opt.kernel_symbols = true;
  tprof::SnapshotSystemState(&p, opt);
  EXPECT_FALSE(p.kernel_symbols.available);
  EXPECT_NE(p.kernel_symbols.note.find("no-such-kallsyms"), std::string::npos);
}

}  // namespace

namespace {

// tprofctl top's interval: what a running builder added since the counts
// of an earlier moment, names and tables kept.
TEST(SamplesSince, KeepsOnlyWhatTheIntervalAdded) {
  ProfileBuilder b;
  Records first;
  first.Add(CommRec(10, TPROF_COMM_EXISTING, "spin"));
  for (int i = 0; i < 5; ++i) first.Add(SampleRec(10, 7, 0x401000, TPROF_SAMPLE_USER, 0, 0, 100));
  first.Add(SampleRec(10, 7, 0x402000, TPROF_SAMPLE_USER, 1, 0, 110));
  first.Add(LostRec(2, 1));
  b.AddRecords(first.data(), first.size());
  const Profile& so_far = b.profile();
  const uint64_t before_last_time_ns = so_far.last_time_ns;
  tprof::ProfileCounts before = tprof::CountsOf(so_far);

  Records second;
  for (int i = 0; i < 3; ++i) second.Add(SampleRec(10, 7, 0x401000, TPROF_SAMPLE_USER, 1, 0, 200));
  second.Add(SampleRec(10, 7, 0x403000, TPROF_SAMPLE_USER, 0, 0, 210));
  second.Add(LostRec(4, 2));
  b.AddRecords(second.data(), second.size());
  Profile interval = tprof::SamplesSince(b.profile(), before);

  EXPECT_EQ(interval.TotalSamples(), 4u);
  EXPECT_EQ((interval.samples[{10, 7, 0x401000, TPROF_SAMPLE_USER}]), 3u);
  EXPECT_EQ((interval.samples[{10, 7, 0x403000, TPROF_SAMPLE_USER}]), 1u);
  EXPECT_EQ(interval.samples.count({10, 7, 0x402000, TPROF_SAMPLE_USER}), 0u)
      << "a row that did not move is not in the interval";
  EXPECT_EQ(interval.cpus[0].samples, 1u);
  EXPECT_EQ(interval.cpus[1].samples, 3u);
  EXPECT_EQ(interval.TotalLostSamples(), 4u);
  EXPECT_EQ(interval.TotalLostRecords(), 2u);
  EXPECT_EQ(interval.ProcessDisplayName(10), "spin") << "names come from the whole recording";
  EXPECT_EQ(interval.first_time_ns, before_last_time_ns);
  EXPECT_EQ(interval.last_time_ns, 210u);

  Profile nothing = tprof::SamplesSince(b.profile(), tprof::CountsOf(b.profile()));
  EXPECT_EQ(nothing.TotalSamples(), 0u);
  EXPECT_EQ(nothing.TotalLostSamples(), 0u);
}

}  // namespace

namespace {

// record --continuous: each interval is taken out of the builder, which
// then holds only what a later sample can need (names, mappings of live
// processes), so memory does not grow with the recording's length.
TEST(TakeInterval, HandsOverEachIntervalAndForgetsExitedProcesses) {
  ProfileBuilder b;
  Records first;
  first.Add(CommRec(10, TPROF_COMM_EXISTING, "daemon", 0, 1));
  first.Add(CommRec(20, TPROF_COMM_FORK, "", 10, 2));  // named after its parent
  first.Map(10, 7, 0x400000, 0x401000, 0, "/usr/bin/daemon");
  first.Map(20, 8, 0x400000, 0x401000, 0, "/usr/bin/daemon");
  const auto d = SampleRec(10, 7, 0x400100, TPROF_SAMPLE_USER, 0, 0, 100);
  first.StackSample(d, TPROF_STACK_LEAF_RA, {}, {0x400200, 0x400300});
  first.StackSample(d, TPROF_STACK_LEAF_RA, {}, {0x400200, 0x400300});
  first.Add(SampleRec(20, 8, 0x400100, TPROF_SAMPLE_USER, 1, 0, 110));
  first.Add(ExitRec(20, 120));
  first.Add(LostRec(2, 1));
  b.AddRecords(first.data(), first.size());
  Profile one = b.TakeInterval();
  EXPECT_EQ(one.TotalSamples(), 3u);
  EXPECT_EQ(one.TotalLostSamples(), 2u);
  ASSERT_EQ(one.stacks.size(), 1u);
  EXPECT_EQ((one.stack_samples[{SampleKey{10, 7, 0x400100, TPROF_SAMPLE_USER}, 1}]), 2u);
  EXPECT_EQ(one.ProcessDisplayName(20), "daemon") << "a fork's empty comm is settled";
  EXPECT_EQ((one.mappings[{20, 8}].size()), 1u);
  EXPECT_EQ(one.first_time_ns, 100u);
  EXPECT_EQ(one.last_time_ns, 110u);
  EXPECT_FALSE(one.contexts.empty());
  const Profile& left = b.profile();
  EXPECT_EQ(left.TotalSamples(), 0u);
  EXPECT_TRUE(left.stacks.empty());
  EXPECT_TRUE(left.contexts.empty());
  EXPECT_EQ(left.TotalLostSamples(), 0u);

  // The next interval: the same stack again gets id 1 of its own table,
  // and a late sample of the exited process still has its name.
  Records second;
  second.StackSample(SampleRec(10, 7, 0x400100, TPROF_SAMPLE_USER, 0, 0, 200), TPROF_STACK_LEAF_RA,
                     {}, {0x400200, 0x400300});
  second.Add(SampleRec(20, 8, 0x400100, TPROF_SAMPLE_USER, 1, 0, 115));
  b.AddRecords(second.data(), second.size());
  Profile two = b.TakeInterval();
  EXPECT_EQ(two.TotalSamples(), 2u);
  ASSERT_EQ(two.stacks.size(), 1u);
  EXPECT_EQ(two.stacks[0], one.stacks[0]);
  EXPECT_EQ((two.stack_samples[{SampleKey{10, 7, 0x400100, TPROF_SAMPLE_USER}, 1}]), 1u);
  EXPECT_EQ(two.ProcessDisplayName(20), "daemon");
  EXPECT_EQ((two.mappings[{20, 8}].size()), 1u);

  // One interval after its exit the process is forgotten; the live one stays.
  Records third;
  third.Add(SampleRec(10, 7, 0x400100, TPROF_SAMPLE_USER, 0, 0, 300));
  b.AddRecords(third.data(), third.size());
  Profile three = b.TakeInterval();
  EXPECT_EQ(three.TotalSamples(), 1u);
  const Profile& now = b.profile();
  EXPECT_EQ(now.processes.count(20), 0u);
  EXPECT_EQ(now.mappings.count({20, 8}), 0u);
  EXPECT_EQ(now.processes.count(10), 1u);
  EXPECT_EQ(now.mappings.count({10, 7}), 1u);

  // Finish() gives what came after the last interval.
  Records last;
  last.Add(SampleRec(10, 7, 0x400100, TPROF_SAMPLE_USER, 0, 0, 400));
  b.AddRecords(last.data(), last.size());
  EXPECT_EQ(b.Finish().TotalSamples(), 1u);
}

// A pid reused by a fork is alive again: it is not forgotten.
// Tick sampling's idle ticks: counted apart from the samples (no task was
// interrupted), handed over per interval, kept in the file, dropped by a
// filter (they name no thread), and part of the achieved rate.
TEST(TickIdle, IdleTicksAreCountedApartFromSamples) {
  ProfileBuilder b;
  Records r;
  r.Add(SampleRec(10, 7, 0x400100, TPROF_SAMPLE_USER, 0, 0, 100));
  r.Add(IdleRec(0, 5, 2)).Add(IdleRec(1, 3, 9));  // iowait is at most the idle ticks
  b.AddRecords(r.data(), r.size());
  EXPECT_EQ(b.profile().idle_ticks, 8u);
  EXPECT_EQ(b.profile().iowait_ticks, 5u);
  EXPECT_EQ(b.profile().TotalSamples(), 1u);
  EXPECT_EQ(b.profile().records.samples, 1u);
  EXPECT_EQ(b.profile().records.unknown, 0u);
  Profile one = b.TakeInterval();
  EXPECT_EQ(one.idle_ticks, 8u);
  EXPECT_EQ(b.profile().idle_ticks, 0u);
  EXPECT_EQ(b.profile().iowait_ticks, 0u);

  const std::string text = tprof::SerializeProfile(one);
  EXPECT_NE(text.find("\nidle\t8\t5\n"), std::string::npos) << text;
  auto back = tprof::ParseProfile(text, "t");
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->idle_ticks, 8u);
  EXPECT_EQ(back->iowait_ticks, 5u);
  EXPECT_EQ(tprof::SerializeProfile(Profile{}).find("\nidle"), std::string::npos)
      << "no line where the tick did not sample";
}

// The module's counts (TPROF_SAMPLING_AGGREGATE): each entry as that many
// samples of its address, on its CPU, delivered as records' samples are,
// spanning the read.
TEST(Aggregate, CountsAreSamplesOfTheirAddress) {
  ProfileBuilder b;
  tprof_aggregate_read read{};
  read.start_ns = 1000;
  read.end_ns = 5000;
  std::vector<tprof_aggregate_entry> entries = {
      {0x401000, 7, 10, TPROF_SAMPLE_USER, 5},
      {0, 0, 10, TPROF_SAMPLE_HIDDEN, 3},
      {0x402000, 7, 11, TPROF_SAMPLE_USER, 0}};  // no count: nothing
  b.AddAggregate(1, read, entries);
  read.start_ns = 5000;
  read.end_ns = 9000;
  b.AddAggregate(1, read, {{0x401000, 7, 10, TPROF_SAMPLE_USER, 2}});
  const Profile& p = b.profile();
  EXPECT_EQ((p.samples.at(SampleKey{10, 7, 0x401000, TPROF_SAMPLE_USER})), 7u);
  EXPECT_EQ((p.samples.at(SampleKey{10, 0, 0, TPROF_SAMPLE_HIDDEN})), 3u);
  EXPECT_EQ(p.samples.size(), 2u);
  EXPECT_EQ(p.cpus.at(1).samples, 10u);
  EXPECT_EQ(p.records.samples, 10u);
  EXPECT_EQ(p.first_time_ns, 1000u);
  EXPECT_EQ(p.last_time_ns, 9000u);
  EXPECT_TRUE(p.contexts.empty());
}

// Counted stacks (ABI 1.22): a record with STACK_KEY | COUNTED defines a
// key and is no sample; the entries that name the key are its ip and
// stack, counted; a definition is kept one interval on (the module defines
// a key again in each table); a key nobody defined is counted at ip 0.
TEST(Aggregate, StackKeysAreTheStacksTheirRecordsDefine) {
  ProfileBuilder b;
  Records r;
  auto def = SampleRec(10, 7, 0x401000, TPROF_SAMPLE_USER, 0);
  def.flags |= TPROF_SAMPLE_STACK_KEY | TPROF_SAMPLE_COUNTED;
  def.caller = 0xfeedull;
  r.StackSample(def, TPROF_STACK_LEAF_RA, {}, {0x401000, 0x402200});
  EXPECT_EQ(b.AddRecords(r.data(), r.size()), r.size());
  EXPECT_EQ(b.profile().records.samples, 0u) << "a definition is no sample";
  tprof_aggregate_read read{};
  read.end_ns = 1;
  b.AddAggregate(2, read, {{0xfeed, 7, 10, TPROF_SAMPLE_USER | TPROF_SAMPLE_STACK_KEY, 6}});
  Profile one = b.TakeInterval();
  const SampleKey key{10, 7, 0x401000, TPROF_SAMPLE_USER};
  EXPECT_EQ(one.samples.at(key), 6u);
  ASSERT_EQ(one.stacks.size(), 1u);
  EXPECT_EQ(one.stacks[0].user, (std::vector<uint64_t>{0x401000, 0x402200}));
  EXPECT_EQ((one.stack_samples.at({key, 1})), 6u);
  EXPECT_EQ(one.cpus.at(2).samples, 6u);
  // The next interval's table names the key the previous interval defined.
  b.AddAggregate(2, read, {{0xfeed, 7, 10, TPROF_SAMPLE_USER | TPROF_SAMPLE_STACK_KEY, 2}});
  Profile two = b.TakeInterval();
  EXPECT_EQ((two.stack_samples.at({key, 1})), 2u);
  EXPECT_EQ(b.undefined_stack_key_samples(), 0u);
  b.AddAggregate(2, read, {{0xbad, 7, 10, TPROF_SAMPLE_USER | TPROF_SAMPLE_STACK_KEY, 3}});
  EXPECT_EQ(b.undefined_stack_key_samples(), 3u);
  EXPECT_EQ((b.profile().samples.at(SampleKey{10, 7, 0, TPROF_SAMPLE_USER})), 3u);
  // A definition that is a record too (AGGREGATE_RECORDS) is one sample.
  Records both;
  def.flags &= ~TPROF_SAMPLE_COUNTED;
  both.StackSample(def, TPROF_STACK_LEAF_RA, {}, {0x401000, 0x402200});
  EXPECT_EQ(b.AddRecords(both.data(), both.size()), both.size());
  EXPECT_EQ(b.profile().samples.at(key), 1u);
}

TEST(TakeInterval, KeepsAPidAForkReused) {
  ProfileBuilder b;
  Records r;
  r.Add(CommRec(30, TPROF_COMM_EXISTING, "old", 0, 1)).Add(ExitRec(30, 5));
  b.AddRecords(r.data(), r.size());
  (void)b.TakeInterval();
  Records again;
  again.Add(CommRec(30, TPROF_COMM_FORK, "new", 1, 9));
  b.AddRecords(again.data(), again.size());
  (void)b.TakeInterval();
  EXPECT_EQ(b.profile().ProcessDisplayName(30), "new");
}

}  // namespace
