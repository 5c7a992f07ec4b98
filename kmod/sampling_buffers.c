// SPDX-License-Identifier: GPL-2.0
/*
 * A sampling session's memory: the control area (one struct
 * tprof_buffer_ctl per possible CPU) and two halves per CPU, for the CPUs
 * that are online at start and each one that comes online later (a CPU
 * that never runs costs nothing). It is an anonymous file of its own that
 * every mapping holds (vma_set_file()): closing the owner's descriptor ends
 * the session while the mappings stay readable until unmapped.
 *
 * The mapping keeps the uapi layout (CPU c's halves at ctl_bytes + 2 * c *
 * half_bytes) and is filled on fault: a page of a CPU without halves is
 * SIGBUS (the reader only reads halves the kernel marked full).
 *
 * Charged like perf's ring buffers: to the owner's user->locked_vm, against
 * its RLIMIT_MEMLOCK at start plus a per-user allowance of
 * sampling_mlock_kb per online CPU (perf_event_mlock_kb); CAP_IPC_LOCK at
 * start exempts the session. Halves added when a CPU comes online are
 * charged then; over the limit that CPU gets none and its samples are
 * counted as lost. Uncharged when the memory is freed.
 */
#include <linux/anon_inodes.h>
#include <linux/capability.h>
#include <linux/cpumask.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include "sampling.h"
#include "compat.h"

static unsigned int sampling_mlock_kb = 512 + (PAGE_SIZE >> 10);
module_param(sampling_mlock_kb, uint, 0644);
MODULE_PARM_DESC(sampling_mlock_kb,
		 "per-user sample buffer allowance per online CPU, KiB, on top of RLIMIT_MEMLOCK (as perf_event_mlock_kb)");

struct tprof_buffers {
	struct user_struct *user;	/* charged; NULL: CAP_IPC_LOCK */
	unsigned long rlimit_pages;	/* the owner's RLIMIT_MEMLOCK at start */
	unsigned long pages;		/* charged, under lock */
	void *ctl;			/* vmalloc_user, ctl_bytes */
	size_t ctl_bytes;
	size_t cpu_bytes;		/* 2 * half_bytes */
	struct mutex lock;		/* adding halves */
	void *halves[];			/* [nr_cpu_ids], smp_store_release */
};

/* Charges @pages to the owner; false if over its limit. Under b->lock. */
static bool tprof_buffers_charge(struct tprof_buffers *b, unsigned long pages)
{
	unsigned long limit;

	if (!b->user)
		return true;
	limit = b->rlimit_pages +
		(READ_ONCE(sampling_mlock_kb) >> (PAGE_SHIFT - 10)) *
		num_online_cpus();
	if (atomic_long_add_return(pages, &b->user->locked_vm) > limit) {
		atomic_long_sub(pages, &b->user->locked_vm);
		return false;
	}
	b->pages += pages;
	return true;
}

static void tprof_buffers_free(struct tprof_buffers *b)
{
	unsigned int cpu;

	for (cpu = 0; cpu < nr_cpu_ids; cpu++)
		vfree(b->halves[cpu]);
	vfree(b->ctl);
	if (b->user) {
		atomic_long_sub(b->pages, &b->user->locked_vm);
		free_uid(b->user);
	}
	kfree(b);
}

static int tprof_buffers_release(struct inode *inode, struct file *file)
{
	tprof_buffers_free(file->private_data);
	return 0;
}

static const struct file_operations tprof_buffers_fops = {
	.owner = THIS_MODULE,
	.release = tprof_buffers_release,
	.llseek = noop_llseek,
};

/* s->buffers, s->buf_file and s->ctl_area, charged to the caller. */
int tprof_buffers_create(struct tprof_session *s, size_t ctl_bytes,
			 u32 half_bytes)
{
	unsigned long ctl_pages = PAGE_ALIGN(ctl_bytes) >> PAGE_SHIFT;
	struct tprof_buffers *b;
	struct file *f;

	b = kzalloc(struct_size(b, halves, nr_cpu_ids), GFP_KERNEL_ACCOUNT);
	if (!b)
		return -ENOMEM;
	mutex_init(&b->lock);
	b->ctl_bytes = ctl_bytes;
	b->cpu_bytes = 2 * (size_t)half_bytes;
	if (!capable(CAP_IPC_LOCK)) {
		b->user = get_current_user();
		b->rlimit_pages = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
		if (!tprof_buffers_charge(b, ctl_pages)) {
			tprof_buffers_free(b);
			return -EPERM;	/* as perf's mmap() */
		}
	}
	b->ctl = vmalloc_user(ctl_bytes);
	if (!b->ctl) {
		tprof_buffers_free(b);
		return -ENOMEM;
	}
	f = anon_inode_getfile("[tprof_buffers]", &tprof_buffers_fops, b, O_RDONLY);
	if (IS_ERR(f)) {
		tprof_buffers_free(b);
		return PTR_ERR(f);
	}
	s->buffers = b;
	s->buf_file = f;
	s->ctl_area = b->ctl;
	return 0;
}

/*
 * @cpu's two halves, allocated and charged on first use: 0 and *halves,
 * -EPERM over the owner's limit, -ENOMEM. Process context (the start ioctl
 * or a cpuhp callback: neither creates perf events here).
 */
int tprof_buffers_add_cpu(struct tprof_buffers *b, unsigned int cpu,
			  u8 **halves)
{
	unsigned long pages = PAGE_ALIGN(b->cpu_bytes) >> PAGE_SHIFT;
	void *area;
	int ret = 0;

	mutex_lock(&b->lock);
	area = b->halves[cpu];
	if (area)
		goto out;
	if (!tprof_buffers_charge(b, pages)) {
		ret = -EPERM;
		goto out;
	}
	area = vmalloc_user(b->cpu_bytes);
	if (!area) {
		if (b->user) {
			atomic_long_sub(pages, &b->user->locked_vm);
			b->pages -= pages;
		}
		ret = -ENOMEM;
		goto out;
	}
	smp_store_release(&b->halves[cpu], area);	/* for the fault handler */
out:
	mutex_unlock(&b->lock);
	*halves = area;
	return ret;
}

/* The page at @pgoff of the uapi layout, or NULL (not backed). */
static struct page *tprof_buffers_page(struct tprof_buffers *b, pgoff_t pgoff)
{
	unsigned long ctl_pages = b->ctl_bytes >> PAGE_SHIFT;
	unsigned long cpu_pages = b->cpu_bytes >> PAGE_SHIFT;
	unsigned long cpu;
	void *area;

	if (pgoff < ctl_pages)
		return vmalloc_to_page(b->ctl + (pgoff << PAGE_SHIFT));
	pgoff -= ctl_pages;
	cpu = pgoff / cpu_pages;
	if (cpu >= nr_cpu_ids)
		return NULL;
	area = smp_load_acquire(&b->halves[cpu]);
	if (!area)
		return NULL;
	return vmalloc_to_page(area + ((pgoff % cpu_pages) << PAGE_SHIFT));
}

static vm_fault_t tprof_buffers_fault(struct vm_fault *vmf)
{
	struct tprof_buffers *b = vmf->vma->vm_file->private_data;
	struct page *page = tprof_buffers_page(b, vmf->pgoff);

	if (!page)
		return VM_FAULT_SIGBUS;
	return vmf_insert_page(vmf->vma, vmf->address, page);
}

static const struct vm_operations_struct tprof_buffers_vm_ops = {
	.fault = tprof_buffers_fault,
};

/*
 * Maps the session's buffers read-only: no write, no exec, not inherited by
 * fork. The mapping holds the buffers' file, not the owner's.
 */
int tprof_buffers_mmap(struct tprof_session *s, struct vm_area_struct *vma)
{
	if (vma->vm_pgoff != 0 || vma->vm_end - vma->vm_start != s->area_bytes)
		return -EINVAL;
	if (vma->vm_flags & (VM_WRITE | VM_EXEC))
		return -EPERM;
	tprof_vm_flags_clear(vma, VM_MAYWRITE | VM_MAYEXEC);
	/* MIXEDMAP: pages are inserted from the fault handler. */
	tprof_vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP |
				VM_MIXEDMAP);
	vma->vm_ops = &tprof_buffers_vm_ops;
	vma_set_file(vma, s->buf_file);
	return 0;
}
