// A process a test leaves running takes the guest's CPU from every test
// after it, and a slower guest turns timing into failures far from the
// cause. After each test, a process that was not there when it started is
// given a few seconds to end, then named ("leftover process ...", which
// make check counts as a failure of that test) and killed, so the next
// test starts on an idle guest.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "guest_env.h"

namespace tprof::test {
namespace {

// User processes: those with a command line (kernel threads and zombies
// have none).
std::set<int> UserProcesses() {
  std::set<int> pids;
  DIR* proc = ::opendir("/proc");
  if (!proc) return pids;
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == ::getpid()) continue;
    std::ifstream cmdline("/proc/" + std::string(e->d_name) + "/cmdline");
    if (cmdline.peek() != std::ifstream::traits_type::eof()) pids.insert(static_cast<int>(pid));
  }
  ::closedir(proc);
  return pids;
}

std::string Comm(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

class LeftoverProcesses : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { before_ = UserProcesses(); }

  void OnTestEnd(const ::testing::TestInfo& info) override {
    std::set<int> left;
    auto none_left = [&] {
      left.clear();
      for (int pid : UserProcesses())
        if (!before_.count(pid)) left.insert(pid);
      return left.empty();
    };
    if (WaitFor(none_left, std::chrono::seconds(5))) return;
    for (int pid : left) {
      std::printf("leftover process %d (%s) after %s.%s: killed\n", pid, Comm(pid).c_str(),
                  info.test_suite_name(), info.name());
      ::kill(pid, SIGKILL);
    }
    std::fflush(stdout);
  }

  std::set<int> before_;
};

// Registered before gtest_main's InitGoogleTest, which keeps it.
const bool kRegistered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new LeftoverProcesses);
  return true;
}();

}  // namespace
}  // namespace tprof::test
