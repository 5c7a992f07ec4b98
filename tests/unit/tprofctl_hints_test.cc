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
