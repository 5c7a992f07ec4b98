// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/tprof: the misc device, its file operations and the ioctl dispatch,
 * which checks each ioctl's type, number and size. GET_INFO is handled
 * here; the others by each feature's ioctl file (metrics_ioctl.c,
 * sampling_ioctl.c, windows_ioctl.c, pmu_ioctl.c), which copies its
 * argument and checks everything in it (reserved fields, pointers) before
 * calling the feature. Structs are zeroed before they are filled so no
 * uninitialized kernel bytes reach userspace.
 */
#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/tprof.h>
#include <linux/uaccess.h>
#include "dev.h"
#include "metrics.h"
#include "pmu.h"
#include "sampling.h"
#include "stats.h"
#include "windows.h"
#include "core/counters.h"
/* TPROF_MODULE_VERSION_STR and TPROF_MODULE_VERSION, from debian/changelog
 * (the Makefile's kmod-version-header writes it into the copy it builds,
 * debian/rules into the DKMS source). */
#include "version.h"

static long tprof_ioctl_get_info(struct tprof_info __user *uinfo)
{
	struct tprof_cpu_stats __user *ustats;
	struct tprof_cpu_stats stats;
	struct tprof_info info;
	u32 cpu, count;
	int ret;

	if (copy_from_user(&info, uinfo, sizeof(info)))
		return -EFAULT;
	ret = tprof_info_check_input(&info);
	if (ret)
		return ret;

	ustats = u64_to_user_ptr(info.cpu_stats);
	count = tprof_info_cpu_stats_count(info.cpu_stats_count, nr_cpu_ids);
	for (cpu = 0; cpu < count; cpu++) {
		memset(&stats, 0, sizeof(stats));
		stats.cpu = cpu;
		if (cpu_possible(cpu)) {
			stats.online = cpu_online(cpu);
			tprof_stats_read_cpu(cpu, &stats.counters);
		}
		if (copy_to_user(&ustats[cpu], &stats, sizeof(stats)))
			return -EFAULT;
	}

	memset(&info, 0, sizeof(info));
	info.abi_major = TPROF_ABI_MAJOR;
	info.abi_minor = TPROF_ABI_MINOR;
	info.module_version = TPROF_MODULE_VERSION;
	info.state = tprof_sampling_state();
	info.nr_cpu_ids = nr_cpu_ids;
	info.nr_online_cpus = num_online_cpus();
	info.features = TPROF_FEAT_SCHED_COUNTERS | TPROF_FEAT_THREAD_METRICS |
			 TPROF_FEAT_SAMPLING | TPROF_FEAT_WINDOWS |
			 TPROF_FEAT_SELF_PAGE | TPROF_FEAT_PMU_PROGRAMS |
			 TPROF_FEAT_THREAD_TOTALS | TPROF_FEAT_PMU_SUBSCRIBE_REPLY |
			 TPROF_FEAT_PMU_WIDE_WATCHPOINTS | TPROF_FEAT_PMU_DATA_RANGES |
			 TPROF_FEAT_EXEC_TRANSITION | TPROF_FEAT_INDEX_REHASHES |
			 TPROF_FEAT_PMU_COUNTS_ONLY | TPROF_FEAT_PMU_COUNTS_ONLY_CPUS |
			 TPROF_FEAT_SAMPLING_CPUS | TPROF_FEAT_SAMPLING_USER_STACK |
			 TPROF_FEAT_UNWIND_TABLES | TPROF_FEAT_UNWIND_SIGNAL_FRAMES |
			 TPROF_FEAT_SAMPLING_TICK | TPROF_FEAT_SAMPLING_AGGREGATE |
			 TPROF_FEAT_SAMPLING_AGGREGATE_STACKS;
	tprof_stats_read_total(&info.total);
	info.cpu_stats = (u64)(uintptr_t)ustats;
	info.cpu_stats_count = count;
	if (copy_to_user(uinfo, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static long tprof_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	if (_IOC_TYPE(cmd) != TPROF_IOC_MAGIC)
		return -ENOTTY;

	/*
	 * Dispatch on the number; a known number with a size or direction this
	 * module does not know is EINVAL.
	 */
#define TPROF_IOCTL(ioc, call)				\
	case _IOC_NR(ioc):				\
		if (cmd != (ioc))			\
			return -EINVAL;			\
		return call
	switch (_IOC_NR(cmd)) {
	TPROF_IOCTL(TPROF_IOC_GET_INFO, tprof_ioctl_get_info(uarg));
	TPROF_IOCTL(TPROF_IOC_METRICS_ENABLE, tprof_ioctl_metrics_enable(uarg));
	TPROF_IOCTL(TPROF_IOC_METRICS_DISABLE, tprof_ioctl_metrics_disable());
	TPROF_IOCTL(TPROF_IOC_METRICS_STATUS, tprof_ioctl_metrics_status(uarg));
	TPROF_IOCTL(TPROF_IOC_THREAD_READ, tprof_ioctl_thread_read(uarg));
	TPROF_IOCTL(TPROF_IOC_DRAIN, tprof_ioctl_drain(uarg));
	TPROF_IOCTL(TPROF_IOC_READ_SELF, tprof_ioctl_read_self(uarg));
	TPROF_IOCTL(TPROF_IOC_SAMPLING_START, tprof_ioctl_sampling_start(file, uarg));
	TPROF_IOCTL(TPROF_IOC_SAMPLING_STOP, tprof_ioctl_sampling_stop(file));
	TPROF_IOCTL(TPROF_IOC_SAMPLING_RELEASE, tprof_ioctl_sampling_release(file, uarg));
	TPROF_IOCTL(TPROF_IOC_SAMPLING_STATUS, tprof_ioctl_sampling_status(uarg));
	TPROF_IOCTL(TPROF_IOC_SAMPLING_STOP_ANY, tprof_ioctl_sampling_stop_any());
	TPROF_IOCTL(TPROF_IOC_SAMPLING_FLUSH, tprof_ioctl_sampling_flush(file));
	TPROF_IOCTL(TPROF_IOC_UNWIND_LOAD, tprof_ioctl_unwind_load(file, uarg));
	TPROF_IOCTL(TPROF_IOC_UNWIND_SPACE, tprof_ioctl_unwind_space(file, uarg));
	TPROF_IOCTL(TPROF_IOC_SAMPLING_AGGREGATE_READ, tprof_ioctl_sampling_aggregate_read(file, uarg));
	TPROF_IOCTL(TPROF_IOC_WINDOW_ADD, tprof_ioctl_window_add(file, uarg));
	TPROF_IOCTL(TPROF_IOC_WINDOW_READ, tprof_ioctl_window_read(file, uarg));
	TPROF_IOCTL(TPROF_IOC_WINDOW_LIST, tprof_ioctl_window_list(file, uarg));
	TPROF_IOCTL(TPROF_IOC_PMU_CREATE, tprof_ioctl_pmu_create(uarg));
#undef TPROF_IOCTL
	default:
		return -ENOTTY;
	}
}

/* Offset TPROF_SELF_PAGE_OFFSET is the caller's self page; 0 the sampling buffers. */
static int tprof_mmap(struct file *file, struct vm_area_struct *vma)
{
	if (vma->vm_pgoff == TPROF_SELF_PAGE_OFFSET >> PAGE_SHIFT)
		return tprof_metrics_self_mmap(vma);
	return tprof_sampling_mmap(file, vma);
}

static int tprof_open(struct inode *inode, struct file *file)
{
	/* misc_open() left the miscdevice here; a sampling session goes here. */
	file->private_data = NULL;
	return 0;
}

static int tprof_release(struct inode *inode, struct file *file)
{
	tprof_sampling_file_release(file);
	return 0;
}

static const struct file_operations tprof_fops = {
	.owner = THIS_MODULE,
	.open = tprof_open,
	.release = tprof_release,
	.mmap = tprof_mmap,
	.poll = tprof_sampling_poll,
	.unlocked_ioctl = tprof_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice tprof_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "tprof",
	.fops = &tprof_fops,
	/* Anyone may open it; each ioctl checks its own permissions. */
	.mode = 0666,
};

int tprof_dev_init(void)
{
	int ret = misc_register(&tprof_miscdev);

	if (ret)
		pr_err("cannot register /dev/tprof: %d\n", ret);
	return ret;
}

void tprof_dev_exit(void)
{
	misc_deregister(&tprof_miscdev);
}
