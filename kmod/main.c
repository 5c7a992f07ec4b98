// SPDX-License-Identifier: GPL-2.0
/*
 * tprof.ko: module entry points. Hooks first, then per-thread metrics (on
 * at load if the metrics= parameter says so), then the device, so the device
 * never reports on hooks that are not there; the reverse on unload.
 */
#include <linux/module.h>
#include <linux/tprof.h>
#include "dev.h"
#include "hooks.h"
#include "metrics.h"
#include "pmu.h"
#include "sampling.h"
/* TPROF_MODULE_VERSION_STR and TPROF_MODULE_VERSION, from debian/changelog
 * (the Makefile's kmod-version-header writes it into the copy it builds,
 * debian/rules into the DKMS source). */
#include "version.h"

static int __init tprof_init(void)
{
	int ret;

	ret = tprof_hooks_init();
	if (ret)
		return ret;
	ret = tprof_metrics_init();
	if (ret)
		goto err_hooks;
	ret = tprof_sampling_init();
	if (ret)
		goto err_metrics;
	ret = tprof_pmu_init();
	if (ret)
		goto err_sampling;
	ret = tprof_dev_init();
	if (ret)
		goto err_pmu;
	pr_info("loaded, version %s, ABI %d.%d\n", TPROF_MODULE_VERSION_STR,
		TPROF_ABI_MAJOR, TPROF_ABI_MINOR);
	return 0;

err_pmu:
	tprof_pmu_exit();
err_sampling:
	tprof_sampling_exit();
err_metrics:
	tprof_metrics_exit();
err_hooks:
	tprof_hooks_exit();
	return ret;
}

static void __exit tprof_exit(void)
{
	tprof_dev_exit();
	tprof_pmu_exit();
	tprof_sampling_exit();
	tprof_metrics_exit();
	tprof_hooks_exit();
	pr_info("unloaded\n");
}

module_init(tprof_init);
module_exit(tprof_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("tprof: whole-machine profiler and per-thread metrics");
MODULE_VERSION(TPROF_MODULE_VERSION_STR);
