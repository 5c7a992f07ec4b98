/* SPDX-License-Identifier: GPL-2.0 */
/* Metric sets: validation of TPROF_IOC_METRICS_ENABLE and metric names. */
#ifndef TPROF_CORE_METRICS_CONFIG_H
#define TPROF_CORE_METRICS_CONFIG_H

#include "core_env.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * 0, or -EINVAL: no metric or more than TPROF_MAX_METRICS, unknown type, a
 * software event that cannot be counted per CPU, config on TIME/DISPATCHES,
 * a duplicate, nonzero flags/padding/reserved fields or unused entries.
 */
int tprof_metrics_config_check(const struct tprof_metrics_config *c);

/*
 * Parses a comma-separated list of metric names ("time,dispatches,
 * page-faults,cycles,r1c2"; raw:0x1c2 too) into @c (zeroed first); 0 or -EINVAL.
 * The names are the ones tprofctl uses.
 */
int tprof_metrics_parse_list(const char *list, struct tprof_metrics_config *c);

#ifdef __cplusplus
}
#endif

#endif /* TPROF_CORE_METRICS_CONFIG_H */
