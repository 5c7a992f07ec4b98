// Continuous recording (`tprofctl record --continuous`): one gzipped pprof
// per interval in a directory, each read by Google's pprof (built from
// Debian's Go source: a reader independent of tprof) with the total the
// recorder reported for it; the intervals' totals add up to the
// recording's; a second recording adds to the series; --keep bounds it;
// an unprivileged user records its own command so.
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../common/temp_dir.h"
#include "guest_env.h"

namespace tprof::test {
namespace {

struct IntervalFile {
  uint64_t samples = 0;
  std::string path;
};

// The recorder's lines: one per file ("tprofctl: N samples, L lost in S s:
// PATH"), then "tprofctl: F interval files, N samples, L lost, in DIR".
struct ContinuousRun {
  std::vector<IntervalFile> files;
  uint64_t reported_files = 0, total = 0;
  bool summary = false;
};

ContinuousRun ParseRun(const std::string& out) {
  ContinuousRun r;
  static const std::regex file(R"(tprofctl: (\d+) samples, \d+ lost in [0-9.]+ s: (\S+))");
  static const std::regex summary(R"(tprofctl: (\d+) interval files, (\d+) samples, \d+ lost, in)");
  std::istringstream in(out);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, file)) r.files.push_back({std::stoull(m[1]), m[2]});
    if (std::regex_search(line, m, summary)) {
      r.summary = true;
      r.reported_files = std::stoull(m[1]);
      r.total = std::stoull(m[2]);
    }
  }
  return r;
}

// pprof -top's total of samples/count, or -1 if it printed none.
int64_t PprofTotal(const std::string& path, std::string* out) {
  Result top = Sh("pprof -sample_index=samples -top -nodecount=5 " + path);
  *out = top.out;
  std::smatch m;
  static const std::regex total(R"(of (\d+) total)");
  if (top.rc != 0 || !std::regex_search(top.out, m, total)) return -1;
  return std::stoll(m[1]);
}

size_t SeriesFiles(const std::string& dir) {
  Result ls = Sh("ls " + dir + " | grep -c '^tprof-.*\\.pb\\.gz$'");
  return ls.out.empty() ? 0 : std::stoul(ls.out);
}

TEST(Continuous, WritesAPprofPerIntervalThatPprofReadsWithItsTotal) {
  TempDir dir;
  const std::string series = dir.File("series");
  ASSERT_EQ(::mkdir(series.c_str(), 0755), 0);
  // About 3 s of CPU at 1 kHz, in files of half a second.
  const std::string record = "cd " + dir.path() + " && tprofctl record --continuous --interval 0.5 --out-dir " +
                             series + " -- tprof-wl-shares --ms 3000";
  Result rec = Sh(record);
  ASSERT_EQ(rec.rc, 0) << rec.out;
  const ContinuousRun run = ParseRun(rec.out);
  ASSERT_TRUE(run.summary) << rec.out;
  EXPECT_EQ(run.reported_files, run.files.size()) << rec.out;
  // A file being written when the next interval ends merges the two, and a
  // loaded guest delays intervals (sid's once gave 2 files for 3 s): the
  // count is printed, the totals are what is checked.
  ASSERT_GE(run.files.size(), 1u) << rec.out;
  std::printf("  [continuous] %zu files for 3 s of CPU at 0.5 s intervals\n", run.files.size());
  EXPECT_EQ(SeriesFiles(series), run.files.size()) << Sh("ls -l " + series).out;
  uint64_t sum = 0;
  for (const IntervalFile& f : run.files) {
    std::string top;
    EXPECT_EQ(PprofTotal(f.path, &top), static_cast<int64_t>(f.samples)) << f.path << "\n" << top;
    sum += f.samples;
  }
  // Nothing falls between two intervals.
  EXPECT_EQ(sum, run.total) << rec.out;
  EXPECT_GE(run.total, 1000u) << "3 s of CPU at 1 kHz";

  // A second recording (a restarted recorder) adds to the same series.
  Result again = Sh(record);
  ASSERT_EQ(again.rc, 0) << again.out;
  EXPECT_EQ(SeriesFiles(series), run.files.size() + ParseRun(again.out).files.size())
      << Sh("ls -l " + series).out;

  // Usage: --out-dir is needed, and must be writable before CMD runs.
  Result no_dir = Sh("tprofctl record --continuous -- true");
  EXPECT_EQ(no_dir.rc, 2) << no_dir.out;
  Result missing = Sh("tprofctl record --continuous --out-dir " + dir.File("absent") + " -- true");
  EXPECT_EQ(missing.rc, 1) << missing.out;
  EXPECT_NE(missing.out.find(dir.File("absent")), std::string::npos) << missing.out;
}

// --keep N leaves the newest N; an unprivileged user records its own
// command continuously.
TEST(Continuous, KeepsTheNewestFilesAndRunsUnprivileged) {
  ScopedParanoid paranoid(2);  // its own processes, user mode (Debian's default is 3)
  TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
  Result rec = RunAsNobody(dir.path(),
                           "mkdir series && tprofctl record --continuous --interval 0.4 --keep 2 "
                           "--out-dir series -- tprof-wl-shares --ms 2000");
  ASSERT_EQ(rec.rc, 0) << rec.out;
  const ContinuousRun run = ParseRun(rec.out);
  ASSERT_GE(run.files.size(), 1u) << rec.out;
  const size_t kept = std::min<size_t>(run.files.size(), 2);
  EXPECT_EQ(SeriesFiles(dir.File("series")), kept) << Sh("ls -l " + dir.File("series")).out;
  // The ones kept are the last written.
  for (size_t i = run.files.size() - kept; i < run.files.size(); ++i) {
    std::string top;
    const std::string path = dir.path() + "/" + run.files[i].path;
    EXPECT_EQ(PprofTotal(path, &top), static_cast<int64_t>(run.files[i].samples)) << path << "\n" << top;
  }
  std::printf("  [continuous] nobody: %zu files written, %zu kept, %llu samples\n", run.files.size(), kept,
              static_cast<unsigned long long>(run.total));
}

// The always-on way: in the scheduler tick, counted in the module, an
// unprivileged user's own command: each interval's file holds the counts
// taken in it (pprof's total is its line), and they add up to the total.
TEST(Continuous, CountsInTheTickAddUpPerIntervalUnprivileged) {
  ScopedParanoid paranoid(2);
  TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
  // Five intervals at least, whatever the guest's clocks do: the work
  // comes in five parts, part k+1 after the k-th file is written (so
  // part 1's samples and part 5's are in different files).
  Result rec = RunAsNobody(dir.path(),
                           "mkdir series && tprofctl record --continuous --interval 0.5 --clock tick "
                           "--aggregate --out-dir series -- sh -c 'for i in 1 2 3 4; do "
                           "tprof-wl-shares --ms 600 || exit 1; "
                           "until [ $(ls series | grep -c \"^tprof-.*[.]pb[.]gz$\") -ge $i ]; do sleep 0.05; done; "
                           "done; tprof-wl-shares --ms 600'");
  ASSERT_EQ(rec.rc, 0) << rec.out;
  EXPECT_EQ(rec.out.find("instead"), std::string::npos) << "no fallback:\n" << rec.out;
  const ContinuousRun run = ParseRun(rec.out);
  ASSERT_TRUE(run.summary) << rec.out;
  ASSERT_GE(run.files.size(), 5u) << rec.out;
  uint64_t sum = 0, with_samples = 0;
  for (const IntervalFile& f : run.files) {
    std::string top;
    const std::string path = dir.path() + "/" + f.path;
    EXPECT_EQ(PprofTotal(path, &top), static_cast<int64_t>(f.samples)) << path << "\n" << top;
    sum += f.samples;
    with_samples += f.samples > 0;
  }
  EXPECT_GE(with_samples, 2u) << "the first part's samples and the last's:\n" << rec.out;
  EXPECT_EQ(sum, run.total) << rec.out;
  EXPECT_GE(run.total, 300u) << "3 s of CPU at HZ (100 at the least)";
  std::printf("  [continuous] tick, counted: %zu files, %llu samples\n", run.files.size(),
              static_cast<unsigned long long>(run.total));
}

}  // namespace
}  // namespace tprof::test
