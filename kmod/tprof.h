/* SPDX-License-Identifier: GPL-2.0 */
/* tprof.ko internals shared between its files. */
#ifndef TPROF_H
#define TPROF_H

#include <linux/percpu.h>
#include <linux/pid.h>
#include <linux/tprof.h>

/* TPROF_MODULE_VERSION_STR and TPROF_MODULE_VERSION, from debian/changelog
 * (the Makefile's kmod-version-header writes it into the copy it builds,
 * debian/rules into the DKMS source). */
#include "version.h"

/* stats.c: per-CPU event counters, written by the hooks. */
DECLARE_PER_CPU(struct tprof_counters, tprof_cpu_counters);
void tprof_stats_read_cpu(unsigned int cpu, struct tprof_counters *out);
void tprof_stats_read_total(struct tprof_counters *out);

/* hooks.c: scheduler tracepoint probes. */
int tprof_hooks_init(void);
void tprof_hooks_exit(void);

/* metrics*.c: per-thread metrics (hooks, ioctls, load/unload); see metrics.h. */
struct task_struct;
void tprof_metrics_sched_switch(struct task_struct *prev,
				struct task_struct *next);
void tprof_metrics_newtask(struct task_struct *p);
void tprof_metrics_exec(struct task_struct *p);
void tprof_metrics_free(struct task_struct *p);
long tprof_ioctl_metrics_enable(struct tprof_metrics_config __user *uarg);
long tprof_ioctl_metrics_disable(void);
long tprof_ioctl_metrics_status(struct tprof_metrics_status __user *uarg);
long tprof_ioctl_thread_read(struct tprof_thread_read __user *uarg);
long tprof_ioctl_drain(struct tprof_drain __user *uarg);
long tprof_ioctl_read_self(struct tprof_self_read __user *uarg);
struct vm_area_struct;
int tprof_metrics_self_mmap(struct vm_area_struct *vma);
int tprof_metrics_init(void);
void tprof_metrics_exit(void);

/* self_page.c: the layout side of the self page (metrics.c owns the pages). */
struct tprof_metrics_config;
struct page;
struct tprof_self_page *tprof_self_page_alloc(void);
void tprof_self_page_put(struct tprof_self_page *p);
struct page *tprof_self_page_page(struct tprof_self_page *p);
void tprof_self_page_init(struct tprof_self_page *p, u64 identity, u32 tid,
			  const struct tprof_metrics_config *c);
void tprof_self_page_charge(struct tprof_self_page *p, const u64 *delta);
void tprof_self_page_switch_in(struct tprof_self_page *p);
void tprof_self_page_retire(struct tprof_self_page *p);
int tprof_self_page_check_vma(struct vm_area_struct *vma);

/* sampling_*.c: sampling sessions (hooks, ioctls, file operations). */
struct file;
struct poll_table_struct;
void tprof_sampling_on_fork(struct task_struct *parent, struct task_struct *child);
void tprof_sampling_on_exec(struct task_struct *p);
void tprof_sampling_on_exit(struct task_struct *p);
long tprof_ioctl_sampling_start(struct file *file,
				struct tprof_sampling_config __user *uarg);
long tprof_ioctl_sampling_stop(struct file *file);
long tprof_ioctl_sampling_stop_any(void);
long tprof_ioctl_sampling_flush(struct file *file);
long tprof_ioctl_sampling_release(struct file *file,
				  struct tprof_buffer_release __user *uarg);
long tprof_ioctl_sampling_status(struct tprof_sampling_status __user *uarg);
u32 tprof_sampling_state(void);
int tprof_sampling_mmap(struct file *file, struct vm_area_struct *vma);
__poll_t tprof_sampling_poll(struct file *file, struct poll_table_struct *wait);
void tprof_sampling_file_release(struct file *file);
int tprof_sampling_init(void);
void tprof_sampling_exit(void);

/* windows.c: counting windows and profil (hooks: sampling.h). */
long tprof_ioctl_window_add(struct file *file, struct tprof_window_add __user *uarg);
long tprof_ioctl_window_read(struct file *file, struct tprof_window_read __user *uarg);
long tprof_ioctl_window_list(struct file *file, struct tprof_window_list __user *uarg);

/* pmu*.c: PMU programs (see pmu.h). */
struct tprof_pmu_program;
long tprof_ioctl_pmu_create(struct tprof_pmu_program __user *uarg);
void tprof_pmu_on_exec(struct task_struct *t);
int tprof_pmu_init(void);
void tprof_pmu_exit(void);

/* admission.c: who may attach what (admission.h). */
#include "admission.h"

/* dev.c: /dev/tprof. */
int tprof_dev_init(void);
void tprof_dev_exit(void);

#endif /* TPROF_H */
