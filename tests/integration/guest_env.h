// Helpers for integration tests, which run inside a tprof-vm guest against
// the real module (see tools/tprof-vm). They never skip: a guest without
// /dev/tprof is a failure.
#ifndef TPROF_TESTS_INTEGRATION_GUEST_ENV_H_
#define TPROF_TESTS_INTEGRATION_GUEST_ENV_H_

#include <cstdint>
#include <string>

#include "tprof/device.h"

namespace tprof::test {

// Opens /dev/tprof or fails the current test with the library's message.
Device OpenDeviceOrFail();

// GET_INFO through the library, failing the test on error.
Info GetInfoOrFail(const Device& dev);

// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), in ns: tests
// that count samples burn CPU time, not wall time, so a descheduled guest
// does not shrink what they measure.
uint64_t ThreadCpuNs();

// Runs a shell command, returns its exit status and captures stdout.
int RunCommand(const std::string& command, std::string* out);

// Forks a child that execs /bin/true and waits for it.
void ForkExecTrue();

// The module file the guest loaded (TPROF_MODULE_PATH, set by tprof-vm).
std::string ModulePath();

// Unloads / loads tprof.ko with the raw syscalls; 0 or errno.
int UnloadModule();
int LoadModule(const std::string& path, const std::string& params = "");

}  // namespace tprof::test

#endif  // TPROF_TESTS_INTEGRATION_GUEST_ENV_H_
