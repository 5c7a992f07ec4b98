// SPDX-License-Identifier: GPL-2.0
/* arm64: the PAC-stripping helper is split into kernel and user (6.4). */
#include <asm/pointer_auth.h>

static unsigned long __maybe_unused check(unsigned long ptr)
{
	return ptrauth_strip_user_insn_pac(ptr) ^ ptrauth_strip_kernel_insn_pac(ptr);
}
