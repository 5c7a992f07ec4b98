// SPDX-License-Identifier: GPL-2.0
/*
 * The counting-window ioctls: WINDOW_ADD, WINDOW_READ and WINDOW_LIST on
 * the caller's sampling session. Here: the session's ownership, the copies
 * of the request from and to userspace, its checks (core/window_math.c for
 * a new window's geometry) and who may add what (CAP_PERFMON for a kernel
 * window, admission.h for a process one). windows.c adds, reads and lists
 * the windows themselves, under its mutex (READ's cells and LIST's entries
 * go to userspace from there, as they are read).
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/pid.h>
#include <linux/tprof.h>
#include <linux/uaccess.h>
#include "windows.h"
#include "admission.h"
#include "sampling.h"
#include "core/window_math.h"

/* 0 if @file owns the sampling session, else EPERM (another does) or ENODATA. */
static long tprof_windows_owner(struct file *file)
{
	if (READ_ONCE(file->private_data))
		return 0;
	return tprof_sampling_state() == TPROF_STATE_SAMPLING ? -EPERM : -ENODATA;
}

long tprof_ioctl_window_add(struct file *file, struct tprof_window_add __user *uarg)
{
	struct tprof_session *s;
	struct tprof_window_add a;
	struct tprof_wm_geom g;
	struct tprof_admission adm = {};
	long ret;

	ret = tprof_windows_owner(file);
	if (ret)
		return ret;
	s = file->private_data;
	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	ret = tprof_wm_check_add(&a, &g);
	if (ret)
		return ret;
	if (a.kind == TPROF_WINDOW_KERNEL) {
		if (!perfmon_capable())
			return -EPERM;
	} else {
		/*
		 * Admitted (admission.h) and held until the window is
		 * published: an exec into a setuid image comes before (EACCES)
		 * or after, where tprof_windows_on_exec() forgets the process.
		 */
		ret = tprof_admit(a.pid, PIDTYPE_TGID, 0, &adm);
		if (ret)
			return ret;
	}

	ret = tprof_window_add(s, &g, a.flags, &adm, &a.id);
	if (ret)
		return ret;
	a.nr_cells = g.nr_cells;
	a.cell_bytes = g.cell_bytes;
	/* On EFAULT the window exists all the same: WINDOW_LIST shows it. */
	return copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;
}

long tprof_ioctl_window_read(struct file *file, struct tprof_window_read __user *uarg)
{
	struct tprof_session *s;
	struct tprof_window_read r;
	long ret;

	ret = tprof_windows_owner(file);
	if (ret)
		return ret;
	s = file->private_data;
	if (copy_from_user(&r, uarg, sizeof(r)))
		return -EFAULT;
	if (r.flags || r.resv[0] || r.resv[1])
		return -EINVAL;
	ret = tprof_window_read(s, &r);
	if (ret)
		return ret;
	return copy_to_user(uarg, &r, sizeof(r)) ? -EFAULT : 0;
}

long tprof_ioctl_window_list(struct file *file, struct tprof_window_list __user *uarg)
{
	struct tprof_session *s;
	struct tprof_window_list l;
	long ret;

	ret = tprof_windows_owner(file);
	if (ret)
		return ret;
	s = file->private_data;
	if (copy_from_user(&l, uarg, sizeof(l)))
		return -EFAULT;
	if (l.resv[0] || l.resv[1] || (!l.windows && l.capacity))
		return -EINVAL;
	ret = tprof_windows_list(s, &l);
	if (ret)
		return ret;
	return copy_to_user(uarg, &l, sizeof(l)) ? -EFAULT : 0;
}
