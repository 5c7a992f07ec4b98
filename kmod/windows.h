/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Counting windows and profil(2) on a sampling session: the ioctls
 * (windows_ioctl.c: ownership, user copies, checks, permissions), then
 * the windows themselves (windows.c): what the ioctls do, the sample
 * handler's and the hooks' part, the session's end.
 */
#ifndef TPROF_WINDOWS_H
#define TPROF_WINDOWS_H

#include <linux/types.h>

struct file;
struct task_struct;
struct tprof_admission;
struct tprof_session;
struct tprof_window_add;
struct tprof_window_list;
struct tprof_window_read;
struct tprof_wm_geom;

/* windows_ioctl.c: the ioctls (dev.c); the caller's file owns the session. */
long tprof_ioctl_window_add(struct file *file, struct tprof_window_add __user *uarg);
long tprof_ioctl_window_read(struct file *file, struct tprof_window_read __user *uarg);
long tprof_ioctl_window_list(struct file *file, struct tprof_window_list __user *uarg);

/* windows.c, for windows_ioctl.c: requests copied and checked there. */
int tprof_window_add(struct tprof_session *s, const struct tprof_wm_geom *g,
		     u32 flags, struct tprof_admission *adm, u32 *id);
int tprof_window_read(struct tprof_session *s, struct tprof_window_read *r);
int tprof_windows_list(struct tprof_session *s, struct tprof_window_list *l);

/* windows.c, on a session (sampling_*.c): samples, hooks, its end. */
void tprof_windows_sample(struct tprof_session *s, u64 pc,
			  struct task_struct *task, bool user);
void tprof_windows_on_fork(struct tprof_session *s, struct task_struct *parent,
			   struct task_struct *child);
void tprof_windows_on_exec(struct tprof_session *s, struct task_struct *p);
void tprof_windows_on_exit(struct tprof_session *s, struct task_struct *p);
void tprof_windows_session_end(struct tprof_session *s);

#endif /* TPROF_WINDOWS_H */
