// SPDX-License-Identifier: GPL-2.0
/* uprobe_register() returns the uprobe and takes a ref_ctr_offset (6.12);
   uprobe_unregister_nosync() and uprobe_unregister_sync() exist. */
#include <linux/uprobes.h>

static struct uprobe * __maybe_unused check(struct inode *inode,
					    struct uprobe_consumer *uc)
{
	struct uprobe *u = uprobe_register(inode, 0, 0, uc);

	uprobe_unregister_nosync(u, uc);
	uprobe_unregister_sync();
	return u;
}
