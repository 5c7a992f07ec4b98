/* SPDX-License-Identifier: GPL-2.0 */
/* /dev/tprof: the misc device, its ioctl dispatch and file operations. */
#ifndef TPROF_DEV_H
#define TPROF_DEV_H

int tprof_dev_init(void);
void tprof_dev_exit(void);

#endif /* TPROF_DEV_H */
