// Library behaviour that needs no module: error codes and messages.
#include "tprof/device/device.h"

#include <gtest/gtest.h>

#include <fcntl.h>

#include <cerrno>

namespace {

// The library says what failed, neutrally: what to do is tprofctl's to say
// (tools/tprofctl/hints.cc, tested in tprofctl_hints_test.cc).
TEST(Device, MissingDeviceSaysWhatFailedNotWhatToType) {
  auto dev = tprof::Device::Open("/nonexistent/tprof");
  ASSERT_FALSE(dev);
  EXPECT_EQ(dev.error().code().value(), ENOENT);
  const std::string& m = dev.error().message();
  EXPECT_NE(m.find("/nonexistent/tprof not found"), std::string::npos) << m;
  EXPECT_NE(m.find("not loaded"), std::string::npos) << m;
  EXPECT_EQ(m.find("insmod"), std::string::npos) << m;
  EXPECT_EQ(m.find("tprofctl"), std::string::npos) << m;
}

TEST(Device, NonTprofDeviceReportsEnotty) {
  auto dev = tprof::Device::Open("/dev/null");
  ASSERT_TRUE(dev) << dev.error().message();
  auto info = dev->GetInfo();
  ASSERT_FALSE(info);
  EXPECT_EQ(info.error().code(), std::errc::inappropriate_io_control_operation);
  EXPECT_NE(info.error().message().find("not a tprof device"), std::string::npos);
}

// One way to ask what a module can do: a module of 1.9 to 1.16 sets no
// bit for what came after 1.8, and FeaturesOf() supplies what its minor
// version had; from 1.17 the module's own bits are the answer.
TEST(Device, FeaturesOfOlderModulesAreImpliedByTheirMinorVersion) {
  tprof_info raw{};
  raw.abi_major = TPROF_ABI_MAJOR;
  raw.abi_minor = 14;
  raw.features = TPROF_FEAT_PMU_PROGRAMS | TPROF_FEAT_THREAD_TOTALS;
  const uint64_t f14 = tprof::FeaturesOf(raw);
  EXPECT_TRUE(f14 & TPROF_FEAT_PMU_PROGRAMS);
  EXPECT_TRUE(f14 & TPROF_FEAT_PMU_SUBSCRIBE_REPLY);
  EXPECT_TRUE(f14 & TPROF_FEAT_PMU_DATA_RANGES);
  EXPECT_TRUE(f14 & TPROF_FEAT_PMU_COUNTS_ONLY);
  EXPECT_FALSE(f14 & TPROF_FEAT_PMU_COUNTS_ONLY_CPUS) << "1.15";
  EXPECT_FALSE(f14 & TPROF_FEAT_SAMPLING_CPUS) << "1.16";
  raw.abi_minor = 8;
  EXPECT_EQ(tprof::FeaturesOf(raw), raw.features) << "1.8 had bits for all it had";
  raw.abi_minor = 17;
  EXPECT_EQ(tprof::FeaturesOf(raw), raw.features) << "1.17 names every feature itself";
  tprof::Info info;
  info.features = f14;
  EXPECT_TRUE(info.Has(TPROF_FEAT_PMU_COUNTS_ONLY));
  EXPECT_FALSE(info.Has(TPROF_FEAT_PMU_COUNTS_ONLY | TPROF_FEAT_SAMPLING_CPUS));
}

TEST(ScopedFd, ClosesOnceAndMovesOwnership) {
  int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  {
    tprof::ScopedFd a(fd);
    tprof::ScopedFd b(std::move(a));
    EXPECT_FALSE(a.valid());
    EXPECT_EQ(b.get(), fd);
  }
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1) << "fd should be closed by ScopedFd";
  EXPECT_EQ(errno, EBADF);
}

}  // namespace
