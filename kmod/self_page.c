// SPDX-License-Identifier: GPL-2.0
/*
 * The self page (ABI 1.4): one zeroed page per thread that asked for it,
 * mapped read-only into its process, where the kernel keeps the thread's
 * odometer (every delta charged to it) and the TSC (on arm64 the generic
 * timer's cntvct_el0) at its last switch-in. The thread adds the time of
 * its current slice itself, so reading its own CPU time costs no system
 * call.
 *
 * This file knows the page's layout; metrics.c owns the pages (one
 * reference from the thread's table slot, one per mapping) and calls these
 * under tprof_metrics_lock. Writers are serialised by that lock; the reader
 * is the thread itself, which retries when seq moved (every switch-out of
 * the thread bumps it), so a TSC difference is always taken on one CPU.
 */
#include <linux/gfp.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/time64.h>
#include "self_page.h"
#include "compat.h"
#include "arch/user_clock.h"
#include "core/metrics_config.h"

static void tprof_self_write_begin(struct tprof_self_page *p)
{
	WRITE_ONCE(p->seq, p->seq + 1);
	smp_wmb();
}

static void tprof_self_write_end(struct tprof_self_page *p)
{
	smp_store_release(&p->seq, p->seq + 1);
}

struct tprof_self_page *tprof_self_page_alloc(void)
{
	/* Charged to the caller's memory cgroup, like the mapping's pages. */
	return (struct tprof_self_page *)get_zeroed_page(GFP_KERNEL_ACCOUNT);
}

void tprof_self_page_put(struct tprof_self_page *p)
{
	if (p)
		put_page(virt_to_page(p));
}

struct page *tprof_self_page_page(struct tprof_self_page *p)
{
	return virt_to_page(p);
}

void tprof_self_page_init(struct tprof_self_page *p, u64 identity, u32 tid,
			  const struct tprof_metrics_config *c)
{
	u32 m;

	tprof_self_write_begin(p);
	p->identity = identity;
	p->tid = tid;
	p->nr_metrics = c->nr_metrics;
	p->time_index = TPROF_SELF_NO_TIME;
	for (m = 0; m < c->nr_metrics; m++)
		if (c->metrics[m].type == TPROF_METRIC_TIME)
			p->time_index = m;
	p->tsc_mult = tprof_arch_clock_mult(&p->tsc_shift);
	p->tsc_in = tprof_arch_clock_now();
	p->flags = TPROF_SELF_LIVE | (p->tsc_mult ? TPROF_SELF_TSC : 0);
	tprof_self_write_end(p);
}

void tprof_self_page_charge(struct tprof_self_page *p, const u64 *delta)
{
	u32 m;

	tprof_self_write_begin(p);
	for (m = 0; m < p->nr_metrics; m++)
		p->total[m] += delta[m];
	p->tsc_in = tprof_arch_clock_now();
	tprof_self_write_end(p);
}

void tprof_self_page_switch_in(struct tprof_self_page *p)
{
	tprof_self_write_begin(p);
	p->tsc_in = tprof_arch_clock_now();
	tprof_self_write_end(p);
}

void tprof_self_page_retire(struct tprof_self_page *p)
{
	tprof_self_write_begin(p);
	p->flags &= ~TPROF_SELF_LIVE;
	tprof_self_write_end(p);
}

/* One page, read-only, not inherited, not in core dumps. */
int tprof_self_page_check_vma(struct vm_area_struct *vma)
{
	if (vma->vm_end - vma->vm_start != PAGE_SIZE)
		return -EINVAL;
	if (vma->vm_flags & (VM_WRITE | VM_EXEC))
		return -EPERM;
	tprof_vm_flags_clear(vma, VM_MAYWRITE | VM_MAYEXEC);
	tprof_vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP);
	return 0;
}
