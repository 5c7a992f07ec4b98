// Receiving a PMU program's events in tests (pmu_test.cc, pmu_data_test.cc,
// pmu_watch_test.cc): the expected ones however late a loaded host sends
// them, then a quiet period for those that must not come.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

#include <gtest/gtest.h>

#include "guest_env.h"
#include "tprof/pmu.h"

namespace tprof::test {

// Receives until `want` events arrived, waiting up to kPatience for them
// (a work item sends them: a loaded host or the debug kernel delays it).
// Asking for more than will come costs kPatience: ask for what is
// expected, and see what else comes with Late() or CollectAll().
inline std::vector<tprof_pmu_event> Collect(pmu::Monitor& m, size_t want) {
  std::vector<tprof_pmu_event> out;
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (out.size() < want) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    auto n = m.Wait(left, [&](const tprof_pmu_event& e) { out.push_back(e); });
    EXPECT_TRUE(n) << n.error().message();
    if (!n) break;
  }
  return out;
}

// The events that arrive within kQuietPeriod: those a test says must not
// come (call it once, after the test's last action).
inline std::vector<tprof_pmu_event> Late(pmu::Monitor& m) {
  std::vector<tprof_pmu_event> out;
  const auto deadline = std::chrono::steady_clock::now() + kQuietPeriod;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    auto n = m.Wait(left, [&](const tprof_pmu_event& e) { out.push_back(e); });
    EXPECT_TRUE(n) << n.error().message();
    if (!n) break;
  }
  return out;
}

// Collect(m, want), then Late(m): a test that expects exactly `want`
// events sees any extra one.
inline std::vector<tprof_pmu_event> CollectAll(pmu::Monitor& m, size_t want) {
  std::vector<tprof_pmu_event> out = Collect(m, want);
  for (const tprof_pmu_event& e : Late(m)) out.push_back(e);
  return out;
}

}  // namespace tprof::test
