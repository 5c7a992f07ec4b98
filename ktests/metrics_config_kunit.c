// SPDX-License-Identifier: GPL-2.0
/* tprof_metrics_config: metric lists (module parameter) and their checks. */
#include <kunit/test.h>
#include "core/metrics_config.h"

struct tprof_parse_case {
	const char *list;
	int expected;
	u32 nr_metrics;
};

static const struct tprof_parse_case tprof_parse_cases[] = {
	{ "time", 0, 1 },
	{ "time,dispatches,page-faults,context-switches,cpu-migrations", 0, 5 },
	{ "cycles,instructions", 0, 2 },
	{ "raw:0x1c2", 0, 1 },
	{ "r1c2", 0, 1 }, /* perf's spelling, the one tprofctl prints */
	{ "r1c2,raw:0x1c2", -EINVAL, 0 }, /* one event twice */
	{ "rZZ", -EINVAL, 0 },
	{ "time\n", 0, 1 }, /* as written to sysfs */
	{ "", -EINVAL, 0 },
	{ "time,", -EINVAL, 0 },
	{ "bogus", -EINVAL, 0 },
	{ "time,time", -EINVAL, 0 },
	{ "raw:", -EINVAL, 0 },
	{ "raw:0xZZ", -EINVAL, 0 },
	{ "time,dispatches,cpu-clock,page-faults,minor-faults,major-faults,"
	  "context-switches,cpu-migrations,cycles", -EINVAL, 0 },
};

static void tprof_parse_desc(const struct tprof_parse_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "\"%s\"", c->list);
	strreplace(desc, '\n', ' ');
}

KUNIT_ARRAY_PARAM(tprof_parse, tprof_parse_cases, tprof_parse_desc);

static void tprof_metrics_parse_list_accepts_only_valid_sets(struct kunit *test)
{
	const struct tprof_parse_case *c = test->param_value;
	struct tprof_metrics_config cfg;

	KUNIT_EXPECT_EQ(test, tprof_metrics_parse_list(c->list, &cfg), c->expected);
	if (!c->expected)
		KUNIT_EXPECT_EQ(test, cfg.nr_metrics, c->nr_metrics);
}

static void tprof_metrics_check_refuses_garbage_in_unused_entries(struct kunit *test)
{
	struct tprof_metrics_config cfg = { .nr_metrics = 1 };

	cfg.metrics[0].type = TPROF_METRIC_TIME;
	KUNIT_EXPECT_EQ(test, tprof_metrics_config_check(&cfg), 0);
	cfg.metrics[3].config = 1;
	KUNIT_EXPECT_EQ(test, tprof_metrics_config_check(&cfg), -EINVAL);
	cfg.metrics[3].config = 0;
	cfg.metrics[0].config = 5; /* time takes no config */
	KUNIT_EXPECT_EQ(test, tprof_metrics_config_check(&cfg), -EINVAL);
	cfg.metrics[0].config = 0;
	cfg.flags = 1;
	KUNIT_EXPECT_EQ(test, tprof_metrics_config_check(&cfg), -EINVAL);
}

static struct kunit_case tprof_metrics_config_cases[] = {
	KUNIT_CASE_PARAM(tprof_metrics_parse_list_accepts_only_valid_sets,
			 tprof_parse_gen_params),
	KUNIT_CASE(tprof_metrics_check_refuses_garbage_in_unused_entries),
	{}
};

static struct kunit_suite tprof_metrics_config_suite = {
	.name = "tprof_metrics_config",
	.test_cases = tprof_metrics_config_cases,
};

kunit_test_suites(&tprof_metrics_config_suite);
