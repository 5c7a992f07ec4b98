// Receiving a PMU program's events in tests (pmu_test.cc, pmu_data_test.cc,
// pmu_watch_test.cc): the expected ones however late a loaded host sends
// them, then exactly those beyond (the program's own counts say when all
// have come).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "guest_env.h"
#include "tprof/device/pmu_program.h"

namespace tprof::test {

// Receives until `want` events arrived or `limit` has passed.
inline std::vector<tprof_pmu_event> ReceiveFor(pmu::Monitor& m, size_t want,
                                               std::chrono::milliseconds limit) {
  std::vector<tprof_pmu_event> out;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (out.size() < want) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    auto n = m.Wait(left, [&](const tprof_pmu_event& e) { out.push_back(e); });
    EXPECT_TRUE(n) << n.error().message();
    if (!n) break;
  }
  return out;
}

// Receives until `want` events arrived, waiting up to kPatience for them
// (a work item sends them: a loaded host or the debug kernel delays it).
// Asking for more than will come costs kPatience: ask for what is
// expected, and see what else comes with Rest() or CollectAll().
inline std::vector<tprof_pmu_event> Collect(pmu::Monitor& m, size_t want) {
  return ReceiveFor(m, want, kPatience);
}

// The events that arrive within kQuietPeriod: those a test says must not
// come (call it once, after the test's last action), where no count says
// when all have come (see Rest()).
inline std::vector<tprof_pmu_event> Late(pmu::Monitor& m) {
  return ReceiveFor(m, SIZE_MAX, kQuietPeriod);
}

// What the monitor has already received, without waiting.
inline std::vector<tprof_pmu_event> Pending(pmu::Monitor& m) {
  std::vector<tprof_pmu_event> out;
  auto n = m.Receive([&](const tprof_pmu_event& e) { out.push_back(e); });
  EXPECT_TRUE(n) << n.error().message();
  return out;
}

// The events of program `p` beyond the `received` its monitor `m` already
// has, known exactly rather than listened for: once the program's queue is
// empty (every event it queued was sent, none lost: PMU_READ's counts) and
// the monitor holds every event sent, whatever else is in the socket is
// extra. A program that lost events cannot say which were sent; then the
// monitor listens for kQuietPeriod (Late).
inline std::vector<tprof_pmu_event> Rest(pmu::Monitor& m, const pmu::Program& p, size_t received) {
  tprof_pmu_values v{};
  const bool read = WaitFor([&] {
    auto r = p.Read();
    if (!r) return true;
    v = *r;
    return v.events_lost > 0 || v.events_queued == v.events_sent;
  });
  if (!read || v.events_lost > 0 || v.events_queued != v.events_sent) return Late(m);
  std::vector<tprof_pmu_event> out = Collect(m, v.events_sent > received ? v.events_sent - received : 0);
  for (const tprof_pmu_event& e : Pending(m)) out.push_back(e);
  return out;
}

// Collect(m, want), then Rest(): a test that expects exactly `want`
// events of program `p` sees any extra one.
inline std::vector<tprof_pmu_event> CollectAll(pmu::Monitor& m, const pmu::Program& p, size_t want) {
  std::vector<tprof_pmu_event> out = Collect(m, want);
  for (const tprof_pmu_event& e : Rest(m, p, out.size())) out.push_back(e);
  return out;
}

}  // namespace tprof::test
