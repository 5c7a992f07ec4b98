// SPDX-License-Identifier: GPL-2.0
/*
 * The PMU program ioctls: PMU_CREATE on /dev/tprof, and PMU_READ and
 * PMU_READ_SUBRANGES on a program's descriptor. Here: the copies from and
 * to userspace, the program's structural check (core/pmu_rules.c), the
 * descriptor's number handed to the caller and installed. pmu.c makes the
 * program (with the checks that need its knowledge of counters: debug
 * registers, instruction alignment, who may count what) and owns the
 * descriptor's file operations, whose ioctl is tprof_pmu_ioctl() here.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/tprof.h>
#include <linux/uaccess.h>
#include "pmu.h"
#include "core/pmu_rules.h"

long tprof_ioctl_pmu_create(struct tprof_pmu_program __user *uarg)
{
	/* 1.6 KiB: not on the kernel stack. */
	struct tprof_pmu_program *c = memdup_user(uarg, sizeof(*c));
	struct file *file;
	long ret;
	int fd;

	if (IS_ERR(c))
		return PTR_ERR(c);
	c->fd = 0;	/* output */
	ret = tprof_pmu_program_check(c);
	if (ret)
		goto out;
	fd = tprof_pmu_create(c, &file);
	if (fd < 0) {
		ret = fd;
		goto out;
	}
	if (put_user(fd, &uarg->fd)) {
		put_unused_fd(fd);
		fput(file);	/* releases the program */
		ret = -EFAULT;
		goto out;
	}
	fd_install(fd, file);
	ret = 0;
out:
	kfree(c);
	return ret;
}

/* ---- The program's descriptor ------------------------------------------- */

static long tprof_pmu_read(struct tprof_pmu_prog *p,
			   struct tprof_pmu_values __user *uarg)
{
	struct tprof_pmu_values v;
	u32 i;
	u64 missed = tprof_pmu_read_counts(p);

	memset(&v, 0, sizeof(v));
	v.hits_missed = missed;
	v.nr_counters = p->config.nr_counters;
	for (i = 0; i < p->config.nr_counters; i++) {
		v.values[i] = atomic64_read(&p->ctr[i].value);
		v.threshold_fired[i] = atomic64_read(&p->ctr[i].threshold_fired);
		if (tprof_pmu_kind_is_exact(p->config.counters[i].kind) ||
		    p->config.counters[i].flags & TPROF_PMU_CTR_COUNT)
			v.exact |= 1U << i;
	}
	for (i = 0; i < p->config.nr_rules; i++)
		v.rule_fired[i] = atomic64_read(&p->rule_fired[i]);
	v.events_queued = atomic64_read(&p->queued);
	v.events_sent = atomic64_read(&p->sent);
	v.events_lost = atomic64_read(&p->lost);
	v.exec_left = atomic64_read(&p->exec_left);
	v.armed = atomic_read(&p->armed);
	return copy_to_user(uarg, &v, sizeof(v)) ? -EFAULT : 0;
}

static long tprof_pmu_read_subranges(struct tprof_pmu_prog *p,
				     struct tprof_pmu_subranges __user *uarg)
{
	struct tprof_pmu_subranges a;
	const struct tprof_pmu_counter *c;
	u64 __user *out;
	u32 i, n;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.__pad || a.resv[0] || a.resv[1] || a.counter >= p->config.nr_counters)
		return -EINVAL;
	c = &p->config.counters[a.counter];
	if (!c->nr_subranges)
		return -EINVAL;
	out = u64_to_user_ptr(a.values);
	n = min(a.capacity, c->nr_subranges);
	for (i = 0; i < n; i++)
		if (put_user(atomic64_read(&p->ctr[a.counter].sub[i]), &out[i]))
			return -EFAULT;
	a.nr_subranges = c->nr_subranges;
	a.width = p->ctr[a.counter].sub_width;
	return copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;
}

long tprof_pmu_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct tprof_pmu_prog *p = file->private_data;

	if (_IOC_TYPE(cmd) != TPROF_IOC_MAGIC)
		return -ENOTTY;
	switch (_IOC_NR(cmd)) {
	case _IOC_NR(TPROF_IOC_PMU_READ):
		return cmd == TPROF_IOC_PMU_READ ?
			tprof_pmu_read(p, (void __user *)arg) : -EINVAL;
	case _IOC_NR(TPROF_IOC_PMU_READ_SUBRANGES):
		return cmd == TPROF_IOC_PMU_READ_SUBRANGES ?
			tprof_pmu_read_subranges(p, (void __user *)arg) : -EINVAL;
	}
	return -ENOTTY;
}
