// Unloading and reloading the module, and the kernel log staying clean.
#include <sys/klog.h>
#include <sys/stat.h>

#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "guest_env.h"

namespace tprof::test {
namespace {

bool DeviceExists() {
  struct stat st;
  return ::stat(TPROF_DEVICE_PATH, &st) == 0;
}

TEST(ModuleLifecycle, UnloadRemovesDeviceAndReloadRestoresStatus) {
  ASSERT_TRUE(DeviceExists()) << "the guest should start with the module loaded";
  ASSERT_EQ(UnloadModule(), 0) << "rmmod tprof failed";
  EXPECT_FALSE(DeviceExists());

  std::string out;
  EXPECT_EQ(RunCommand("tprofctl status 2>&1", &out), 1) << out;
  EXPECT_NE(out.find("insmod"), std::string::npos)
      << "without the module, tprofctl should say how to load it: " << out;

  ASSERT_EQ(LoadModule(ModulePath()), 0) << "insmod " << ModulePath() << " failed";
  ASSERT_TRUE(DeviceExists());
  out.clear();
  EXPECT_EQ(RunCommand("tprofctl status --json", &out), 0) << out;

  // Counters restart at load: a fresh module has counted little so far.
  Device dev = OpenDeviceOrFail();
  ForkExecTrue();
  Info info = GetInfoOrFail(dev);
  EXPECT_GE(info.total.forks, 1u);
  EXPECT_GE(info.total.execs, 1u);
}

TEST(ModuleLifecycle, UnloadWithAnOpenFdWaitsForIt) {
  Device dev = OpenDeviceOrFail();
  // The open file pins the module: unload must refuse, not pull it away.
  EXPECT_EQ(UnloadModule(), EWOULDBLOCK);
  EXPECT_TRUE(GetInfoOrFail(dev).total.context_switches > 0);
}

TEST(KernelLog, HasNoWarningsBugsOrLockdepReports) {
  int size = ::klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, nullptr, 0);
  ASSERT_GT(size, 0);
  std::string buf(static_cast<size_t>(size), '\0');
  int n = ::klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf.data(), size);
  ASSERT_GT(n, 0);
  buf.resize(static_cast<size_t>(n));
  std::regex bad(R"(^(<\d+>)?(\[ *[0-9.]+\] )?(WARNING|BUG|Oops|UBSAN|.*KASAN|.*circular locking))");
  std::istringstream lines(buf);
  std::string line;
  while (std::getline(lines, line)) EXPECT_FALSE(std::regex_search(line, bad)) << line;
  EXPECT_NE(buf.find("tprof: loaded"), std::string::npos) << "module load message missing";
}

}  // namespace
}  // namespace tprof::test
