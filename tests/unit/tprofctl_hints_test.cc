// What tprofctl adds to the library's neutral errors (tools/tprofctl/hints.h).
#include "../../tools/tprofctl/hints.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "elf_fixtures.h"
#include "tprof/analysis/archive.h"
#include "tprof/device/device.h"
#include "tprof/analysis/elf_snapshot.h"

namespace tprof::cli {
namespace {

bool Has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

TEST(Hints, MissingDeviceNamesTheBuiltModuleAndDkms) {
  auto dev = Device::Open("/nonexistent/tprof");
  ASSERT_FALSE(dev);
  std::string h = Hint(dev.error(), Doing::kOpenDevice);
  EXPECT_TRUE(Has(h, "sudo insmod ")) << h;
  EXPECT_TRUE(Has(h, "build/kmod/")) << h;
  EXPECT_TRUE(Has(h, "/kmod/tprof.ko")) << h;
  EXPECT_FALSE(Has(h, " kmod/tprof.ko")) << "the build puts it under build/kmod/RELEASE: " << h;
  EXPECT_TRUE(Has(h, "modprobe tprof")) << h;
}

TEST(Hints, OldModuleSaysToLoadThisVersions) {
  auto dev = Device::Open("/dev/null");
  ASSERT_TRUE(dev);
  auto info = dev->GetInfo();
  ASSERT_FALSE(info);
  std::string h = Hint(info.error(), Doing::kOpenDevice);
  EXPECT_TRUE(Has(h, "rmmod tprof")) << h;
  EXPECT_TRUE(Has(h, "insmod")) << h;
}

TEST(Hints, EachFailureGetsItsOwnAdvice) {
  auto e = [](int err) { return Error::FromErrno(err, "x"); };
  EXPECT_TRUE(Has(Hint(e(EBUSY), Doing::kSampling), "tprofctl stop")) << "a recorder runs";
  EXPECT_TRUE(Has(Hint(e(EPERM), Doing::kAllCpus), "CAP_PERFMON"));
  EXPECT_TRUE(Has(Hint(e(EPERM), Doing::kAllCpus), "record -- CMD"));
  EXPECT_TRUE(Has(Hint(e(EACCES), Doing::kSampling), "perf_event_paranoid"));
  EXPECT_TRUE(Has(Hint(e(ENODATA), Doing::kMetrics), "tprofctl metrics on"));
  EXPECT_TRUE(Has(Hint(e(ENODATA), Doing::kThreads), "tprofctl metrics on"));
  EXPECT_TRUE(Has(Hint(e(ENOENT), Doing::kReadProfile), "tprofctl record"));
  EXPECT_FALSE(Has(Hint(e(ENOENT), Doing::kReadProfile), "insmod")) << "a missing profile is no module";
  EXPECT_TRUE(Has(Hint(e(ENODATA), Doing::kReadProfile), "record it again"))
      << "a profile without per-sample context";
  EXPECT_TRUE(Has(Hint(e(EPERM), Doing::kPmuAllCpus), "CAP_PERFMON"));
  EXPECT_EQ(Hint(e(EINTR), Doing::kOther), "");
}

}  // namespace
}  // namespace tprof::cli

namespace tprof::cli {
namespace {

TEST(Hints, UnnamedSamplesSuggestTheFilesDebugPackage) {
  std::vector<UnresolvedObject> objects = {
      {"/usr/lib/x86_64-linux-gnu/libc.so.6", 40, "libc6"},
      {"/usr/lib/x86_64-linux-gnu/libfoo.so.1", 20, "libfoo1"},
      {"/home/me/prog", 10, ""},
      {"/usr/bin/other", 1, "other"}};
  auto has = [](const std::string& p) { return p == "libfoo1-dbg"; };
  std::string h = DebugSymbolsHint(objects, 3, has);
  EXPECT_TRUE(Has(h, "40 samples in /usr/lib/x86_64-linux-gnu/libc.so.6")) << h;
  EXPECT_TRUE(Has(h, "\"libc.so.6+0x...\"")) << h;
  EXPECT_TRUE(Has(h, "sudo apt install libc6-dbgsym")) << h;
  EXPECT_TRUE(Has(h, "sudo apt install libfoo1-dbg`")) << "a -dbg package when apt has one: " << h;
  EXPECT_TRUE(Has(h, "/home/me/prog have no function name")) << h;
  EXPECT_TRUE(Has(h, "build it with -g")) << h;
  EXPECT_FALSE(Has(h, "/usr/bin/other")) << "only the first `limit` files: " << h;
  EXPECT_TRUE(Has(h, "DEBUGINFOD_URLS=")) << h;
  EXPECT_EQ(DebugSymbolsHint({}, 3, has), "");
  // A system library whose package is unknown (no dpkg database) is not
  // the user's to rebuild; /usr/local is.
  std::string sys = DebugSymbolsHint({{"/usr/lib/x86_64-linux-gnu/libc.so.6", 40, ""},
                                      {"/usr/lib/libz.so.1", 5, ""},
                                      {"/usr/local/lib/libmine.so", 3, ""}},
                                     3, has);
  EXPECT_TRUE(Has(sys, "`dpkg -S /usr/lib/x86_64-linux-gnu/libc.so.6` names it")) << sys;
  EXPECT_TRUE(Has(sys, "glibc's are `libc6-dbg`")) << sys;
  std::map<std::string, std::string> line_of;  // file -> its hint line
  std::istringstream lines(sys);
  for (std::string l; std::getline(lines, l);)
    for (const char* f : {"libc.so.6 ", "libz.so.1 ", "libmine.so "})
      if (Has(l, f)) line_of[f] = l;
  EXPECT_FALSE(Has(line_of["libz.so.1 "], "build it with -g")) << sys;
  EXPECT_FALSE(Has(line_of["libz.so.1 "], "libc6-dbg")) << "glibc's package for glibc only: " << sys;
  EXPECT_TRUE(Has(line_of["libmine.so "], "build it with -g")) << sys;
  EXPECT_FALSE(AptHasPackage("x; touch /tmp/tprof-hint-injected")) << "not a package name";
}

// dump warns about every file rebuilt since the recording, annotate about
// the file it annotates (the same words, RebuiltFilesWarning).
TEST(Hints, RebuiltFilesAreWarnedAboutUnlessTheArchiveHasTheRecordedBuild) {
  const std::string full = test::SymFiles() + "/full/libsymtest.so";
  const std::string rebuilt = test::SymFiles() + "/rebuilt/libsymtest.so";
  const std::string recorded = FileBuildId(full);
  const std::string now = FileBuildId(rebuilt);
  ASSERT_EQ(recorded.size(), 40u) << full << ": make unit-tests";
  ASSERT_NE(now, recorded);
  Profile p;
  p.build_ids[rebuilt] = recorded;
  p.build_ids[full] = recorded;  // unchanged: no warning
  p.build_ids["/nonexistent/libgone.so"] = recorded;

  const std::string all = RebuiltFilesWarning(p, "");
  EXPECT_TRUE(Has(all, "tprofctl: warning: " + rebuilt + " was rebuilt after the recording: "
                       "its symbols may be wrong (build id " + recorded + " when recorded, " +
                       now + " now)\n")) << all;
  EXPECT_TRUE(Has(all, "tprofctl: warning: /nonexistent/libgone.so is gone or unreadable since "
                       "the recording: its symbols may be wrong (build id " + recorded +
                       " when recorded, none now)\n")) << all;
  EXPECT_FALSE(Has(all, full + " ")) << all;

  const std::string one = RebuiltFilesWarning(p, "", rebuilt);
  EXPECT_TRUE(Has(one, rebuilt)) << one;
  EXPECT_FALSE(Has(one, "libgone")) << "annotate: only the annotated file: " << one;
  EXPECT_EQ(RebuiltFilesWarning(p, "", full), "") << "the annotated file is unchanged";

  // An archive with the recorded build: the report reads that copy.
  const std::string symfs = ::testing::TempDir() + "tprof-hints-symfs-" + std::to_string(::getpid());
  const std::string copy = SymfsPath(symfs, recorded);
  std::filesystem::create_directories(std::filesystem::path(copy).parent_path());
  std::filesystem::copy_file(full, copy);
  const std::string archived = RebuiltFilesWarning(p, symfs);
  std::filesystem::remove_all(symfs);
  EXPECT_EQ(archived, "") << "every file's recorded build is in the archive";
}

}  // namespace
}  // namespace tprof::cli
