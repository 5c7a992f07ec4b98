// Metric names and lists as tprofctl accepts them.
#include <linux/perf_event.h>

#include <gtest/gtest.h>

#include "tprof/device/metrics.h"

namespace {

using tprof::MetricSpec;
using tprof::ParseMetricList;

TEST(MetricNames, ListParsesInOrder) {
  auto specs = ParseMetricList("time,dispatches,page-faults,raw:0x1c2");
  ASSERT_TRUE(specs) << specs.error().message();
  ASSERT_EQ(specs->size(), 4u);
  EXPECT_EQ((*specs)[0], (MetricSpec{TPROF_METRIC_TIME, 0}));
  EXPECT_EQ((*specs)[2], (MetricSpec{TPROF_METRIC_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS}));
  EXPECT_EQ((*specs)[3], (MetricSpec{TPROF_METRIC_RAW, 0x1c2}));
}

TEST(MetricNames, NamesAndKeysRoundTrip) {
  for (const std::string& name : tprof::KnownMetricNames()) {
    auto specs = ParseMetricList(name);
    ASSERT_TRUE(specs) << name;
    EXPECT_EQ(tprof::MetricName((*specs)[0]), name);
  }
  EXPECT_EQ(tprof::MetricKey(MetricSpec{TPROF_METRIC_TIME, 0}), "time_ns");
  EXPECT_EQ(tprof::MetricName(MetricSpec{TPROF_METRIC_RAW, 0x1c2}), "r1c2") << "perf's spelling";
  auto raw = ParseMetricList("r1c2,raw:0x1c3");
  ASSERT_TRUE(raw) << raw.error().message();
  EXPECT_EQ((*raw)[0], (MetricSpec{TPROF_METRIC_RAW, 0x1c2}));
  EXPECT_EQ((*raw)[1], (MetricSpec{TPROF_METRIC_RAW, 0x1c3})) << "raw:CODE is still accepted";
}

TEST(MetricNames, BadListsSayWhatIsKnown) {
  for (const char* bad : {"", "time,", "bogus", "time,time", "raw:", "raw:12x", "r", "r12x",
                          "time,dispatches,cpu-clock,page-faults,minor-faults,major-faults,"
                          "context-switches,cpu-migrations,cycles"}) {
    auto specs = ParseMetricList(bad);
    ASSERT_FALSE(specs) << bad;
    EXPECT_EQ(specs.error().code().value(), EINVAL);
    EXPECT_NE(specs.error().message().find("known:"), std::string::npos);
  }
}

}  // namespace
