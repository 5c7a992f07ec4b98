// Every way userspace can get an ioctl wrong, and the errno it gets back.
#include <linux/tprof.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "guest_env.h"

namespace tprof::test {
namespace {

int IoctlErrno(int fd, unsigned long cmd, void* arg) {
  errno = 0;
  return ::ioctl(fd, cmd, arg) == 0 ? 0 : errno;
}

TEST(IoctlErrors, UnknownNumberIsEnotty) {
  Device dev = OpenDeviceOrFail();
  tprof_info info{};
  EXPECT_EQ(IoctlErrno(dev.fd(), _IOWR(TPROF_IOC_MAGIC, 0x7f, tprof_info), &info), ENOTTY);
  EXPECT_EQ(IoctlErrno(dev.fd(), _IOWR('x', 0x00, tprof_info), &info), ENOTTY);
  EXPECT_EQ(IoctlErrno(dev.fd(), _IO(TPROF_IOC_MAGIC, 0x42), nullptr), ENOTTY);
}

TEST(IoctlErrors, WrongStructSizeOrDirectionIsEinval) {
  Device dev = OpenDeviceOrFail();
  std::vector<char> buf(4096);
  EXPECT_EQ(IoctlErrno(dev.fd(), _IOC(_IOC_READ | _IOC_WRITE, TPROF_IOC_MAGIC, 0, 8), buf.data()),
            EINVAL);
  EXPECT_EQ(IoctlErrno(dev.fd(),
                       _IOC(_IOC_READ | _IOC_WRITE, TPROF_IOC_MAGIC, 0, sizeof(tprof_info) + 8),
                       buf.data()),
            EINVAL);
  EXPECT_EQ(IoctlErrno(dev.fd(), _IOR(TPROF_IOC_MAGIC, 0, tprof_info), buf.data()), EINVAL);
}

TEST(IoctlErrors, BadPointersAreEfault) {
  Device dev = OpenDeviceOrFail();
  EXPECT_EQ(IoctlErrno(dev.fd(), TPROF_IOC_GET_INFO, nullptr), EFAULT);
  EXPECT_EQ(IoctlErrno(dev.fd(), TPROF_IOC_GET_INFO, reinterpret_cast<void*>(16)), EFAULT);

  // A struct that straddles into an unmapped page.
  long page = ::sysconf(_SC_PAGESIZE);
  void* map = ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  ASSERT_EQ(::munmap(static_cast<char*>(map) + page, page), 0);
  void* straddling = static_cast<char*>(map) + page - sizeof(tprof_info) / 2;
  std::memset(straddling, 0, sizeof(tprof_info) / 2);
  EXPECT_EQ(IoctlErrno(dev.fd(), TPROF_IOC_GET_INFO, straddling), EFAULT);

  // A read-only struct: readable input, unwritable output.
  ASSERT_EQ(::mprotect(map, page, PROT_READ), 0);
  void* readonly = static_cast<char*>(map);
  EXPECT_EQ(IoctlErrno(dev.fd(), TPROF_IOC_GET_INFO, readonly), EFAULT);
  ::munmap(map, page);

  // A bad pointer embedded in the struct.
  tprof_info info{};
  info.cpu_stats = 16;
  info.cpu_stats_count = 1;
  EXPECT_EQ(IoctlErrno(dev.fd(), TPROF_IOC_GET_INFO, &info), EFAULT);
}

TEST(IoctlErrors, ReservedFieldsAndHalfGivenArraysAreEinval) {
  Device dev = OpenDeviceOrFail();
  tprof_info info{};
  info.resv[3] = 1;
  EXPECT_EQ(IoctlErrno(dev.fd(), TPROF_IOC_GET_INFO, &info), EINVAL);
  info = tprof_info{};
  info.__pad = 1;
  EXPECT_EQ(IoctlErrno(dev.fd(), TPROF_IOC_GET_INFO, &info), EINVAL);
  info = tprof_info{};
  info.cpu_stats_count = 1;
  EXPECT_EQ(IoctlErrno(dev.fd(), TPROF_IOC_GET_INFO, &info), EINVAL);
}

TEST(IoctlErrors, ShortArrayGetsOnlyWhatFitsAndNoStrayBytes) {
  Device dev = OpenDeviceOrFail();
  tprof_cpu_stats stats[2];
  std::memset(stats, 0xAA, sizeof(stats));
  tprof_info info;
  std::memset(&info, 0xAA, sizeof(info));  // output fields are ignored on input
  info.__pad = 0;
  std::memset(info.resv, 0, sizeof(info.resv));
  info.cpu_stats = reinterpret_cast<uintptr_t>(stats);
  info.cpu_stats_count = 1;
  ASSERT_EQ(IoctlErrno(dev.fd(), TPROF_IOC_GET_INFO, &info), 0);
  EXPECT_EQ(info.cpu_stats_count, 1u);
  EXPECT_EQ(stats[0].cpu, 0u);
  for (uint64_t r : stats[0].counters.resv) EXPECT_EQ(r, 0u) << "reserved bytes leaked";
  for (uint64_t r : info.total.resv) EXPECT_EQ(r, 0u) << "reserved bytes leaked";
  for (uint64_t r : info.resv) EXPECT_EQ(r, 0u);
  EXPECT_EQ(info.__pad, 0u);
  unsigned char untouched[sizeof(tprof_cpu_stats)];
  std::memset(untouched, 0xAA, sizeof(untouched));
  EXPECT_EQ(std::memcmp(&stats[1], untouched, sizeof(untouched)), 0)
      << "the module wrote past cpu_stats_count";
}

}  // namespace
}  // namespace tprof::test
