// Library behaviour that needs no module: error codes and messages.
#include "tprof/device.h"

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
