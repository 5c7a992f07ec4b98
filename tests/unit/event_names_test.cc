// The one name table (linux/tprof_event_names.h): every name means the same
// event in the module's metrics= parameter, tprofctl's metric lists,
// sampling's --event and PMU counters, and comes back as itself.
#include "tprof/base/event_names.h"

#include <linux/perf_event.h>
#include <linux/tprof.h>

#include <gtest/gtest.h>

#include <string>

#include "core/metrics_config.h"
#include "tprof/device/metrics.h"
#include "tprof/device/pmu_spec.h"
#include "tprof/device/sampling.h"

namespace {

using tprof::EventName;

TEST(EventNames, EveryNameRoundTripsWhereverItIsAccepted) {
  size_t metrics = 0, samples = 0, pmu = 0;
  for (const EventName& e : tprof::EventNames()) {
    SCOPED_TRACE(e.name);
    EXPECT_EQ(tprof::FindEvent(e.type, e.config), &e) << "two names for one event";
    if (e.uses & tprof::kUseMetric) {
      ++metrics;
      auto specs = tprof::ParseMetricList(e.name);
      ASSERT_TRUE(specs) << specs.error().message();
      EXPECT_EQ((*specs)[0], (tprof::MetricSpec{e.type, e.config}));
      EXPECT_EQ(tprof::MetricName((*specs)[0]), e.name);
      EXPECT_EQ(tprof::MetricKey((*specs)[0]), e.key);
      // The module's parser (metrics=) reads the same name as the same event.
      tprof_metrics_config c{};
      ASSERT_EQ(tprof_metrics_parse_list(e.name, &c), 0);
      EXPECT_EQ(c.metrics[0].type, e.type);
      EXPECT_EQ(c.metrics[0].config, e.config);
    } else {
      tprof_metrics_config c{};
      EXPECT_NE(tprof_metrics_parse_list(e.name, &c), 0) << "not a metric in the module";
      EXPECT_FALSE(tprof::ParseMetricList(e.name)) << "not a metric in the library";
    }
    tprof::SamplingOptions o;
    tprof::Status st = tprof::ParseSampleEvent(e.name, &o);
    EXPECT_EQ(bool(st), (e.uses & tprof::kUseSample) != 0);
    if (st) {
      ++samples;
      bool clock = e.config == PERF_COUNT_SW_CPU_CLOCK && e.type == TPROF_METRIC_SOFTWARE;
      EXPECT_EQ(o.event_type, clock ? uint32_t(TPROF_SAMPLE_ON_CLOCK) : e.type);
      EXPECT_EQ(o.event_config, clock ? 0 : e.config);
    }
    auto ev = tprof::pmu::ParseEvent(e.name, nullptr);
    EXPECT_EQ(bool(ev), (e.uses & tprof::kUsePmu) != 0);
    if (ev) {
      ++pmu;
      EXPECT_EQ(ev->config, e.config);
      EXPECT_EQ(ev->kind, e.type == TPROF_METRIC_HARDWARE ? uint32_t(TPROF_PMU_EV_HARDWARE)
                                                          : uint32_t(TPROF_PMU_EV_SOFTWARE));
      std::string aliases = tprof::EventAliases(e.name);
      for (size_t pos = 0; pos < aliases.size();) {
        size_t sp = aliases.find(' ', pos);
        std::string alias = aliases.substr(pos, sp == std::string::npos ? sp : sp - pos);
        auto a = tprof::pmu::ParseEvent(alias, nullptr);
        ASSERT_TRUE(a) << alias;
        EXPECT_EQ(a->config, e.config) << alias;
        pos = sp == std::string::npos ? aliases.size() : sp + 1;
      }
    }
  }
  EXPECT_GE(metrics, 14u);
  EXPECT_GE(samples, 9u);
  EXPECT_GE(pmu, 13u);
}

TEST(EventNames, RawEventsAreSpelledRHexEverywhere) {
  EXPECT_EQ(tprof::RawEventName(0x1c2), "r1c2");
  EXPECT_EQ(tprof::ParseRawEventName("r1c2"), 0x1c2u);
  EXPECT_EQ(tprof::ParseRawEventName("raw:0x1c2"), 0x1c2u) << "the old metric spelling";
  EXPECT_EQ(tprof::ParseRawEventName("raw:450"), 450u);
  EXPECT_FALSE(tprof::ParseRawEventName("raw:0x1c2", false));
  EXPECT_FALSE(tprof::ParseRawEventName("r"));
  EXPECT_FALSE(tprof::ParseRawEventName("rxyz"));
  tprof::SamplingOptions o;
  ASSERT_TRUE(tprof::ParseSampleEvent("r1c2", &o));
  EXPECT_EQ(o.event_type, uint32_t(TPROF_METRIC_RAW));
  EXPECT_EQ(o.event_config, 0x1c2u);
  auto ev = tprof::pmu::ParseEvent("r1c2:1000", nullptr);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->kind, uint32_t(TPROF_PMU_EV_RAW));
  EXPECT_EQ(ev->config, 0x1c2u);
  for (const char* list : {"r1c2", "raw:0x1c2"}) {
    tprof_metrics_config c{};
    ASSERT_EQ(tprof_metrics_parse_list(list, &c), 0) << list << " in the module's metrics=";
    EXPECT_EQ(c.metrics[0].type, uint32_t(TPROF_METRIC_RAW));
    EXPECT_EQ(c.metrics[0].config, 0x1c2u) << list;
  }
  tprof_metrics_config c{};
  EXPECT_NE(tprof_metrics_parse_list("r1c2x", &c), 0);
}

}  // namespace
