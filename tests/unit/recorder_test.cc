// tprof::Recorder without a module: starting fails with the session's error
// (so a program can tell a missing module from a device that is not
// tprof's), and BlockStopSignals blocks exactly the stop signals.
#include "tprof/device/recorder.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>

namespace {

// The library's error is neutral (what failed, errno); tprofctl's hints
// add how to load the module (tprofctl_hints_test.cc).
TEST(Recorder, StartWithoutTheDeviceSaysTheModuleIsNotLoaded) {
  auto recorder = tprof::Recorder::Start({}, "/nonexistent/tprof");
  ASSERT_FALSE(recorder) << "a recorder started without a device";
  EXPECT_EQ(recorder.error().code().value(), ENOENT) << recorder.error().message();
  EXPECT_NE(recorder.error().message().find("module is not loaded"), std::string::npos)
      << recorder.error().message();
  EXPECT_EQ(recorder.error().message().find("insmod"), std::string::npos)
      << "the library names no tool: " << recorder.error().message();
}

TEST(Recorder, StartOnANonTprofDeviceFailsWithEnotty) {
  auto recorder = tprof::Recorder::Start({}, "/dev/null");
  ASSERT_FALSE(recorder) << "a recorder started on /dev/null";
  EXPECT_EQ(recorder.error().code(), std::errc::inappropriate_io_control_operation)
      << recorder.error().message();
}

bool Blocked(int signo) {
  sigset_t now;
  sigemptyset(&now);
  pthread_sigmask(SIG_BLOCK, nullptr, &now);
  return sigismember(&now, signo) == 1;
}

TEST(Recorder, BlockStopSignalsBlocksSigintAndSigtermOnly) {
  ASSERT_FALSE(Blocked(SIGINT));
  tprof::BlockStopSignals(true);
  EXPECT_TRUE(Blocked(SIGINT));
  EXPECT_TRUE(Blocked(SIGTERM));
  EXPECT_FALSE(Blocked(SIGCHLD)) << "the recorded child's exit must still arrive";
  tprof::BlockStopSignals(false);
  EXPECT_FALSE(Blocked(SIGINT));
  EXPECT_FALSE(Blocked(SIGTERM));
}

}  // namespace
