// What tprofctl adds to the library's neutral errors (tools/tprofctl/hints.h).
#include "../../tools/tprofctl/hints.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "tprof/device.h"

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
  EXPECT_FALSE(AptHasPackage("x; touch /tmp/tprof-hint-injected")) << "not a package name";
}

}  // namespace
}  // namespace tprof::cli
