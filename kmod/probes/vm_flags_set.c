// SPDX-License-Identifier: GPL-2.0
/* vm_flags is changed through vm_flags_set()/vm_flags_clear() (6.3). */
#include <linux/mm.h>

static void __maybe_unused check(struct vm_area_struct *vma)
{
	vm_flags_set(vma, VM_DONTEXPAND);
	vm_flags_clear(vma, VM_MAYWRITE);
}
