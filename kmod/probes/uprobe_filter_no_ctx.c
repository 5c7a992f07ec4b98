// SPDX-License-Identifier: GPL-2.0
/* A uprobe filter takes no uprobe_filter_ctx (6.12). */
#include <linux/uprobes.h>

static bool filter(struct uprobe_consumer *uc, struct mm_struct *mm)
{
	return true;
}

static void __maybe_unused check(struct uprobe_consumer *uc)
{
	uc->filter = filter;
}
