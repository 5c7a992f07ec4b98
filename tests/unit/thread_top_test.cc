// The live per-thread table's arithmetic (tprof/thread_top.h): deltas by
// thread identity, %CPU from the time metric, order. The kernel side
// (totals that take nothing) is tested in the guest (ThreadMetrics.*).
#include "tprof/device/thread_top.h"

#include <gtest/gtest.h>

namespace {

using tprof::ThreadMetrics;
using tprof::ThreadTotals;

ThreadMetrics T(uint32_t tid, uint64_t identity, std::vector<uint64_t> values) {
  ThreadMetrics t;
  t.pid = 100;
  t.tid = tid;
  t.identity = identity;
  t.comm = "t" + std::to_string(tid);
  t.values = std::move(values);
  return t;
}

TEST(ThreadTop, RowsAreWhatEachThreadAddedHeaviestFirst) {
  ThreadTotals before{{T(1, 11, {1'000'000, 5}), T(2, 12, {9'000'000, 7}), T(3, 13, {4, 4})}, 0};
  // Thread 2 ran 250 ms of a 500 ms interval, thread 1 50 ms; thread 3 did
  // not move; tid 4 is new (counts from zero).
  ThreadTotals now{{T(1, 11, {51'000'000, 6}), T(2, 12, {259'000'000, 9}), T(3, 13, {4, 4}),
                    T(4, 14, {100'000'000, 1})},
                   2};
  auto f = tprof::DiffThreadTotals(before, now, 500'000'000, /*time_metric=*/0);
  EXPECT_EQ(f.threads, 4u);
  EXPECT_EQ(f.unreadable, 2u);
  ASSERT_EQ(f.rows.size(), 3u) << "a thread that did not move is left out";
  EXPECT_EQ(f.rows[0].thread.tid, 2u);
  EXPECT_EQ(f.rows[0].thread.values, (std::vector<uint64_t>{250'000'000, 2}));
  EXPECT_DOUBLE_EQ(f.rows[0].cpu_percent, 50.0);
  EXPECT_EQ(f.rows[1].thread.tid, 4u);
  EXPECT_DOUBLE_EQ(f.rows[1].cpu_percent, 20.0);
  EXPECT_EQ(f.rows[2].thread.tid, 1u);
  EXPECT_DOUBLE_EQ(f.rows[2].cpu_percent, 10.0);
}

TEST(ThreadTop, AReusedTidIsANewThread) {
  ThreadTotals before{{T(7, 1, {500})}, 0};
  ThreadTotals now{{T(7, 2, {30})}, 0};  // tid 7 exited; a new thread got it
  auto f = tprof::DiffThreadTotals(before, now, 1000, 0);
  ASSERT_EQ(f.rows.size(), 1u);
  EXPECT_EQ(f.rows[0].thread.values[0], 30u) << "not 30 - 500, nor clamped to 0";
}

TEST(ThreadTop, WithoutATimeMetricThereIsNoCpuShare) {
  std::vector<tprof::MetricSpec> metrics(1);
  metrics[0].type = TPROF_METRIC_DISPATCHES;
  EXPECT_EQ(tprof::TimeMetricIndex(metrics), -1);
  metrics.insert(metrics.begin(), tprof::MetricSpec{TPROF_METRIC_TIME, 0});
  EXPECT_EQ(tprof::TimeMetricIndex(metrics), 0);
  auto f = tprof::DiffThreadTotals({{T(1, 1, {0})}, 0}, {{T(1, 1, {3}), T(2, 2, {5})}, 0}, 1000, -1);
  ASSERT_EQ(f.rows.size(), 2u);
  EXPECT_EQ(f.rows[0].thread.tid, 2u) << "sorted by the first metric";
  EXPECT_EQ(f.rows[0].cpu_percent, -1);
}

}  // namespace
