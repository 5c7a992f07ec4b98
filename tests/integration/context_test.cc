// Per-sample context as a user relies on it: one recording of two
// processes, one of them two threads spinning in two functions
// (tprof-wl-threads) beside tprof-wl-shares, then `tprofctl dump` with
// --tid, --cpu, --time and --comm. Thread filters must give exactly the
// thread's function; CPU, time and process filters must partition the
// samples exactly.
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "../common/json.h"
#include "../common/temp_dir.h"
#include "guest_env.h"

namespace tprof::test {
namespace {

// tprofctl dump --format json of `path` with `filter`; nullopt (and a
// failure) when it fails or is not JSON.
std::optional<Json> Dump(const std::string& path, const std::string& filter) {
  std::string out;
  const int rc = RunCommand("tprofctl dump -i " + path + " --format json " + filter + " 2>&1", &out);
  EXPECT_EQ(rc, 0) << filter << ": " << out;
  std::string error;
  auto doc = ParseJson(out, &error);
  EXPECT_TRUE(doc) << filter << ": " << error << "\n" << out.substr(0, 2000);
  return doc;
}

uint64_t Samples(const Json& j) { return j.at("samples").get<uint64_t>(); }

// Samples of `function` over every process's table.
uint64_t FunctionSamples(const Json& j, const std::string& function) {
  uint64_t n = 0;
  for (const Json& pf : j.at("functions"))
    for (const Json& f : pf.at("functions"))
      if (f.at("function").get<std::string>() == function) n += f.at("samples").get<uint64_t>();
  return n;
}

class SampleContext : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    std::string out;
    int rc = -1;
    // Two processes at once: the two threads (1 s of CPU each) and
    // tprof-wl-shares (0.5 s); longer where that brings either thread's
    // function no more than the 50 samples the tests want.
    (void)RecordUntil(1000, 51, [&](unsigned ms) -> uint64_t {
      out.clear();
      rc = RunCommand("cd " + dir_->path() + " && tprofctl record -o ctx.data --by process -- sh -c " +
                          "'tprof-wl-threads --ms " + std::to_string(ms) + " >threads.out & " +
                          "tprof-wl-shares --ms " + std::to_string(ms / 2) +
                          " >/dev/null; wait' 2>&1 && cat threads.out",
                      &out);
      auto all = rc == 0 ? Dump(Path(), "") : std::nullopt;
      return all ? std::min(FunctionSamples(*all, "wl_thread_one"), FunctionSamples(*all, "wl_thread_two")) : 0;
    });
    ASSERT_EQ(rc, 0) << out;
    std::istringstream lines(out.substr(out.find("one tid ")));
    std::string word;
    lines >> word >> word >> tid_one_ >> word >> word >> tid_two_;
    ASSERT_GT(tid_one_, 0u) << out;
    ASSERT_GT(tid_two_, 0u) << out;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string Path() { return dir_->File("ctx.data"); }

  static TempDir* dir_;
  static uint32_t tid_one_, tid_two_;
};

TempDir* SampleContext::dir_ = nullptr;
uint32_t SampleContext::tid_one_ = 0;
uint32_t SampleContext::tid_two_ = 0;

TEST_F(SampleContext, ATidFilterKeepsExactlyThatThreadsFunction) {
  auto all = Dump(Path(), "");
  ASSERT_TRUE(all);
  const uint64_t one = FunctionSamples(*all, "wl_thread_one");
  const uint64_t two = FunctionSamples(*all, "wl_thread_two");
  ASSERT_GT(one, 50u) << "wl_thread_one was hardly sampled";
  ASSERT_GT(two, 50u) << "wl_thread_two was hardly sampled";
  for (auto [tid, mine, other] : {std::tuple{tid_one_, "wl_thread_one", "wl_thread_two"},
                                  std::tuple{tid_two_, "wl_thread_two", "wl_thread_one"}}) {
    auto j = Dump(Path(), "--tid " + std::to_string(tid));
    ASSERT_TRUE(j);
    EXPECT_EQ(FunctionSamples(*j, other), 0u) << "--tid " << tid << " shows " << other;
    EXPECT_EQ(FunctionSamples(*j, mine), FunctionSamples(*all, mine))
        << "--tid " << tid << " lost some of " << mine << "'s samples";
    // Its other samples: its exec and start-up (thread one), the clock reads
    // (system calls, slow under TCG), spread over many kernel functions:
    // 85% and 96% in wl_thread_one and _two in 6.12, 63% in the debug
    // kernel. Whatever the kernel, its own function heads the thread's.
    std::string top;
    uint64_t top_n = 0;
    for (const Json& pf : j->at("functions"))
      for (const Json& f : pf.at("functions"))
        if (f.at("samples").get<uint64_t>() > top_n)
          top_n = f.at("samples").get<uint64_t>(), top = f.at("function").get<std::string>();
    EXPECT_EQ(top, mine) << "thread " << tid << "'s heaviest function";
    ASSERT_EQ(j->at("processes").size(), 1u) << "one thread, one process";
    EXPECT_EQ(j->at("processes")[0].at("name").get<std::string>(), "tprof-wl-thread");
    std::printf("  [context] --tid %u: %llu samples, %llu in %s\n", tid,
                static_cast<unsigned long long>(Samples(*j)),
                static_cast<unsigned long long>(FunctionSamples(*j, mine)), mine);
  }
  auto both = Dump(Path(), "--tid " + std::to_string(tid_one_) + "," + std::to_string(tid_two_));
  ASSERT_TRUE(both);
  EXPECT_EQ(FunctionSamples(*both, "wl_thread_one") + FunctionSamples(*both, "wl_thread_two"),
            one + two);
}

TEST_F(SampleContext, CpuFiltersPartitionTheSamples) {
  auto all = Dump(Path(), "");
  ASSERT_TRUE(all);
  ASSERT_GE(all->at("cpus").size(), 2u) << "the guest has 2 CPUs";
  uint64_t sum = 0;
  for (const Json& cpu : all->at("cpus")) {
    const uint32_t id = cpu.at("cpu").get<uint32_t>();
    auto j = Dump(Path(), "--cpu " + std::to_string(id));
    ASSERT_TRUE(j);
    EXPECT_EQ(Samples(*j), cpu.at("samples").get<uint64_t>()) << "cpu " << id;
    ASSERT_EQ(j->at("cpus").size(), 1u);
    EXPECT_EQ(j->at("cpus")[0].at("cpu").get<uint32_t>(), id);
    sum += Samples(*j);
  }
  EXPECT_EQ(sum, Samples(*all)) << "the CPUs' samples do not add up to the whole";
  auto range = Dump(Path(), "--cpu 0-" + std::to_string(all->at("cpus").size() - 1));
  ASSERT_TRUE(range);
  EXPECT_EQ(Samples(*range), Samples(*all));
}

TEST_F(SampleContext, TwoHalvesOfTheTimePartitionTheSamples) {
  auto all = Dump(Path(), "");
  ASSERT_TRUE(all);
  const uint64_t half_ms = all->at("duration_ns").get<uint64_t>() / 2 / 1'000'000;
  ASSERT_GT(half_ms, 100u);
  auto first = Dump(Path(), "--time 0," + std::to_string(half_ms) + "ms");
  auto second = Dump(Path(), "--time " + std::to_string(half_ms) + "ms,");
  ASSERT_TRUE(first && second);
  EXPECT_GT(Samples(*first), 0u);
  EXPECT_GT(Samples(*second), 0u);
  EXPECT_EQ(Samples(*first) + Samples(*second), Samples(*all));
  EXPECT_EQ(FunctionSamples(*first, "wl_thread_one") + FunctionSamples(*second, "wl_thread_one"),
            FunctionSamples(*all, "wl_thread_one"));
  // Each half spans its half of the recording (to the 10 ms granularity).
  const uint64_t ms = 1'000'000, duration = all->at("duration_ns").get<uint64_t>();
  EXPECT_LE(first->at("duration_ns").get<uint64_t>(), half_ms * ms);
  EXPECT_LE(second->at("duration_ns").get<uint64_t>(), duration - half_ms * ms + 10 * ms);
  // A window after the recording's end selects nothing: an error that
  // shows the real span, not an empty report with status 0.
  std::string out;
  EXPECT_EQ(RunCommand("tprofctl dump -i " + Path() + " --time " +
                           std::to_string(duration / ms + 20) + "ms, 2>&1",
                       &out),
            1)
      << out;
  EXPECT_TRUE(Contains(out, "no sample of " + Path() + " matches time [")) << out;
  EXPECT_TRUE(Contains(out, "the samples span 0 to ")) << out;
}

TEST_F(SampleContext, ACommFilterSelectsOneProcessOfTwo) {
  auto all = Dump(Path(), "");
  ASSERT_TRUE(all);
  std::map<std::string, uint64_t> by_name;
  for (const Json& p : all->at("processes"))
    by_name[p.at("name").get<std::string>()] += p.at("samples").get<uint64_t>();
  ASSERT_GT(by_name["tprof-wl-shares"], 0u);
  ASSERT_GT(by_name["tprof-wl-thread"], 0u);
  for (const char* name : {"tprof-wl-shares", "tprof-wl-thread"}) {
    auto j = Dump(Path(), std::string("--comm ") + name);
    ASSERT_TRUE(j);
    ASSERT_EQ(j->at("processes").size(), 1u) << name;
    EXPECT_EQ(j->at("processes")[0].at("name").get<std::string>(), name);
    EXPECT_EQ(Samples(*j), by_name[name]) << name;
  }
  EXPECT_EQ(FunctionSamples(*Dump(Path(), "--comm tprof-wl-shares"), "wl_thread_one"), 0u);
  // A name no process had: the names it could have been, status 1.
  std::string none;
  EXPECT_EQ(RunCommand("tprofctl dump -i " + Path() + " --comm nosuch 2>&1", &none), 1) << none;
  EXPECT_TRUE(Contains(none, "the processes: ")) << none;
  EXPECT_TRUE(Contains(none, "tprof-wl-thread")) << none;
  // Other formats read the same selection.
  std::string folded;
  ASSERT_EQ(RunCommand("tprofctl dump -i " + Path() + " --format folded --comm tprof-wl-thread",
                       &folded),
            0);
  EXPECT_EQ(folded.find("tprof-wl-shares"), std::string::npos) << folded;
  EXPECT_NE(folded.find("wl_thread_two"), std::string::npos) << folded;
  // --top and --by shape the tables; an export has none and says so.
  for (const char* format : {"folded", "pprof"}) {
    std::string refused;
    EXPECT_EQ(RunCommand("tprofctl dump -i " + Path() + " --format " + format +
                             " --top 3 -o /dev/null 2>&1",
                         &refused),
              2)
        << refused;
    EXPECT_TRUE(Contains(refused, "--top, --by, --percent-limit and --sort shape the text and json tables")) << refused;
  }
}

// --percent-limit and --sort on a real recording, as a perf user types them.
TEST_F(SampleContext, PercentLimitAndSortShapeTheFunctionTables) {
  auto all = Dump(Path(), "--percent-limit 0 --by symbol");
  ASSERT_TRUE(all);
  ASSERT_FALSE(all->at("functions").empty());
  const Json& heaviest = all->at("functions")[0];
  const std::string pid = std::to_string(heaviest.at("pid").get<uint32_t>());
  // 100% of the heaviest process (--pid: its table shows whatever its
  // share): every row is left out, its samples stay in the per-space rows.
  auto none = Dump(Path(), "--percent-limit 100 --by symbol --pid " + pid);
  ASSERT_TRUE(none);
  ASSERT_EQ(none->at("functions").size(), 1u);
  const Json& cut = none->at("functions")[0];
  size_t left_out = 0;
  uint64_t left_out_samples = 0, shown_samples = 0;
  for (const Json& f : cut.at("functions")) shown_samples += f.at("samples").get<uint64_t>();
  for (const Json& l : cut.at("left_out")) {
    left_out += l.at("functions").get<size_t>();
    left_out_samples += l.at("samples").get<uint64_t>();
  }
  EXPECT_LE(cut.at("functions").size(), 1u) << "only a row of 100% may stay";
  EXPECT_EQ(cut.at("functions").size() + left_out, heaviest.at("functions").size());
  EXPECT_EQ(shown_samples + left_out_samples, heaviest.at("samples").get<uint64_t>())
      << "no sample vanishes with its row";
  std::string text;
  ASSERT_EQ(RunCommand("tprofctl dump -i " + Path() + " --by symbol --sort dso --percent-limit 0",
                       &text),
            0)
      << text;
  EXPECT_TRUE(Contains(text, "SAMPLES: samples in the function itself; PROC:")) << text;
  EXPECT_TRUE(Contains(text, "wl_thread_two")) << text;
  std::string refused;
  EXPECT_EQ(RunCommand("tprofctl dump -i " + Path() + " --sort nosuch 2>&1", &refused), 2)
      << refused;
  EXPECT_EQ(RunCommand("tprofctl dump -i " + Path() + " --percent-limit 101 2>&1", &refused), 2)
      << refused;
}

TEST_F(SampleContext, DiffTakesTheSameFiltersOnBothProfiles) {
  auto mine = Dump(Path(), "--tid " + std::to_string(tid_one_));
  ASSERT_TRUE(mine);
  std::string out;
  ASSERT_EQ(RunCommand("tprofctl diff " + Path() + " " + Path() + " --format json --tid " +
                           std::to_string(tid_one_) + " 2>&1",
                       &out),
            0)
      << out;
  std::string error;
  auto j = ParseJson(out, &error);
  ASSERT_TRUE(j) << error << "\n" << out;
  EXPECT_EQ(j->at("a").at("samples").get<uint64_t>(), Samples(*mine));
  EXPECT_EQ(j->at("b").at("samples").get<uint64_t>(), Samples(*mine));
  for (const Json& row : j->at("rows"))
    EXPECT_NE(row.at("function").get<std::string>(), "wl_thread_two") << row.dump();
}

}  // namespace
}  // namespace tprof::test
