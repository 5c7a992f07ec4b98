// SPDX-License-Identifier: GPL-2.0
/* A uprobe handler takes a session cookie, __u64 *data (6.13). */
#include <linux/uprobes.h>

static int handler(struct uprobe_consumer *uc, struct pt_regs *regs, __u64 *data)
{
	return 0;
}

static void __maybe_unused check(struct uprobe_consumer *uc)
{
	uc->handler = handler;
}
