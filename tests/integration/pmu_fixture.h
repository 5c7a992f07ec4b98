// The fixture of the PmuTest suite (pmu_test.cc and pmu_watch_test.cc:
// GoogleTest wants one fixture class for all of a suite's tests, so it is
// here, outside either file's anonymous namespace): the device, this
// process's symbols, and the steps nearly every test takes. Spec and
// Create end the test when they cannot do their part (FailTest: as an
// ASSERT would, from a function that returns a value).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "guest_env.h"
#include "tprof/device/pmu_program.h"

namespace tprof::test {

// A monitor subscribed to program `p`: a monitor that cannot be opened
// ends the test, a refused subscription is a failure it goes on after.
inline pmu::Monitor SubscribedMonitor(const pmu::Program& p) {
  auto m = pmu::Monitor::Open();
  if (!m) FailTest(m.error().message());
  auto st = m->Subscribe(p);
  EXPECT_TRUE(st) << st.error().message();
  return std::move(*m);
}

// PMU_READ of `p`; all zero, and a failure the test goes on after, on error.
inline tprof_pmu_values ReadOrFail(const pmu::Program& p) {
  auto v = p.Read();
  EXPECT_TRUE(v) << v.error().message();
  return v ? *v : tprof_pmu_values{};
}

class PmuTest : public ::testing::Test {
 protected:
  // A spec with `counters` ("NAME=EVENT[@RANGE]", symbols resolved in this
  // process); a counter it refuses ends the test.
  pmu::ProgramSpec Spec(std::initializer_list<std::string> counters) const {
    pmu::ProgramSpec spec;
    for (const std::string& c : counters)
      if (auto st = spec.AddCounter(c, &syms_); !st) FailTest(c + ": " + st.error().message());
    return spec;
  }

  // The program of `spec` in `scope` (pid 0: this thread or process); a
  // refusal ends the test.
  pmu::Program Create(const pmu::ProgramSpec& spec, uint32_t scope = TPROF_PMU_SCOPE_THREAD,
                      uint32_t pid = 0) const {
    return Create(spec.Build(scope, pid));
  }
  // The same for a program the test wrote or changed itself.
  pmu::Program Create(const tprof_pmu_program& program) const {
    auto p = pmu::Program::Create(dev_, program);
    if (!p) FailTest(p.error().message());
    return std::move(*p);
  }

  // The errno PMU_CREATE fails `program` with; 0 when it is made (and
  // closed again at once).
  int ErrnoOf(const tprof_pmu_program& program) const {
    auto p = pmu::Program::Create(dev_, program);
    return p ? 0 : p.error().code().value();
  }

  // For a test that unloads the module: no descriptor of it may stay open.
  void CloseDevice() { Device closing = std::move(dev_); }

  // Opened, and the symbols read, before the test body runs (a failure
  // ends the test).
  Device dev_ = OpenDeviceOrFail();
  const pmu::SymbolResolver syms_ = [] {
    auto r = pmu::SymbolResolver::ForProcess(0);
    if (!r) FailTest(r.error().message());
    return std::move(*r);
  }();
};

}  // namespace tprof::test
