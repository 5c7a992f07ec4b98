// SPDX-License-Identifier: GPL-2.0
/* Metric sets: pure logic, see metrics_config.h. */
#include "metrics_config.h"
#include <linux/tprof_event_names.h>

struct tprof_metric_name {
	const char *name;
	u32 type;
	u64 config;
};

/* The per-thread metrics of the shared table (event_names.h). */
#define TPROF_METRIC_NAME(name, key, type, config, uses) \
	{ (uses) & TPROF_NAME_METRIC ? (name) : NULL, (type), (config) },
static const struct tprof_metric_name tprof_metric_names[] = {
	TPROF_EVENT_NAMES(TPROF_METRIC_NAME)
};
#undef TPROF_METRIC_NAME

static bool tprof_sw_event_ok(u64 config)
{
	switch (config) {
	case PERF_COUNT_SW_CPU_CLOCK:
	case PERF_COUNT_SW_PAGE_FAULTS:
	case PERF_COUNT_SW_PAGE_FAULTS_MIN:
	case PERF_COUNT_SW_PAGE_FAULTS_MAJ:
	case PERF_COUNT_SW_CONTEXT_SWITCHES:
	case PERF_COUNT_SW_CPU_MIGRATIONS:
	case PERF_COUNT_SW_ALIGNMENT_FAULTS:
	case PERF_COUNT_SW_EMULATION_FAULTS:
		return true;
	default:
		return false; /* task-clock and dummy/bpf events make no sense per CPU */
	}
}

static bool tprof_metric_ok(const struct tprof_metric *m)
{
	if (m->__pad)
		return false;
	switch (m->type) {
	case TPROF_METRIC_TIME:
	case TPROF_METRIC_DISPATCHES:
		return m->config == 0;
	case TPROF_METRIC_SOFTWARE:
		return tprof_sw_event_ok(m->config);
	case TPROF_METRIC_HARDWARE:
		return m->config < PERF_COUNT_HW_MAX;
	case TPROF_METRIC_RAW:
		return true;
	default:
		return false;
	}
}

int tprof_metrics_config_check(const struct tprof_metrics_config *c)
{
	u32 i, j;

	if (c->nr_metrics == 0 || c->nr_metrics > TPROF_MAX_METRICS || c->flags)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(c->resv); i++)
		if (c->resv[i])
			return -EINVAL;
	for (i = 0; i < TPROF_MAX_METRICS; i++) {
		const struct tprof_metric *m = &c->metrics[i];

		if (i >= c->nr_metrics) {
			if (m->type || m->__pad || m->config)
				return -EINVAL;
			continue;
		}
		if (!tprof_metric_ok(m))
			return -EINVAL;
		for (j = 0; j < i; j++)
			if (c->metrics[j].type == m->type &&
			    c->metrics[j].config == m->config)
				return -EINVAL;
	}
	return 0;
}

static bool tprof_name_eq(const char *a, size_t alen, const char *b)
{
	size_t blen = strlen(b);

	return alen == blen && !memcmp(a, b, alen);
}

/* Parses a hexadecimal or decimal u64; 0 or -EINVAL. */
static int tprof_parse_u64(const char *s, size_t len, u64 *out)
{
	u64 v = 0;
	u32 base = 10;
	size_t i = 0;

	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	}
	if (i == len)
		return -EINVAL;
	for (; i < len; i++) {
		char ch = s[i];
		u32 d;

		if (ch >= '0' && ch <= '9')
			d = ch - '0';
		else if (base == 16 && ch >= 'a' && ch <= 'f')
			d = ch - 'a' + 10;
		else if (base == 16 && ch >= 'A' && ch <= 'F')
			d = ch - 'A' + 10;
		else
			return -EINVAL;
		if (v > (~0ULL - d) / base)
			return -EINVAL;
		v = v * base + d;
	}
	*out = v;
	return 0;
}

static int tprof_parse_one(const char *s, size_t len, struct tprof_metric *m)
{
	size_t i;

	/* rHEX as perf spells raw events; raw:CODE (hex or decimal) too. */
	if (len > 4 && !memcmp(s, "raw:", 4)) {
		m->type = TPROF_METRIC_RAW;
		return tprof_parse_u64(s + 4, len - 4, &m->config);
	}
	if (len > 1 && s[0] == 'r') {
		char hex[19] = "0x";

		if (len - 1 > 16)
			return -EINVAL;
		memcpy(hex + 2, s + 1, len - 1);
		m->type = TPROF_METRIC_RAW;
		return tprof_parse_u64(hex, len + 1, &m->config);
	}
	for (i = 0; i < ARRAY_SIZE(tprof_metric_names); i++) {
		if (tprof_metric_names[i].name &&
		    tprof_name_eq(s, len, tprof_metric_names[i].name)) {
			m->type = tprof_metric_names[i].type;
			m->config = tprof_metric_names[i].config;
			return 0;
		}
	}
	return -EINVAL;
}

int tprof_metrics_parse_list(const char *list, struct tprof_metrics_config *c)
{
	const char *p = list;

	memset(c, 0, sizeof(*c));
	for (;;) {
		const char *end = p;
		int ret;

		while (*end && *end != ',' && *end != '\n')
			end++;
		if (end == p || c->nr_metrics == TPROF_MAX_METRICS)
			return -EINVAL;
		ret = tprof_parse_one(p, (size_t)(end - p), &c->metrics[c->nr_metrics]);
		if (ret)
			return ret;
		c->nr_metrics++;
		if (*end != ',')
			break;
		p = end + 1;
	}
	return tprof_metrics_config_check(c);
}
