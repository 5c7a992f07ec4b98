/*
 * Stands for arm64's vDSO in the unwind table tests: no CFI at all, leaf
 * functions as the kernel's are (with -DFRAMED, one that pushes a frame
 * record instead), and the signal trampoline as
 * arch/arm64/kernel/vdso/sigreturn.S lays it out (a nop before it, so that
 * a return address's pc - 4 still falls in it).
 */
	.text
	.globl	__kernel_clock_gettime
	.type	__kernel_clock_gettime, %function
__kernel_clock_gettime:
#ifdef FRAMED
	stp	x29, x30, [sp, #-16]!
	mov	x29, sp
	ldp	x29, x30, [sp], #16
#else
	mov	x8, #113
	svc	#0
	nop
#endif
	ret
	.size	__kernel_clock_gettime, . - __kernel_clock_gettime

	nop
	.globl	__kernel_rt_sigreturn
__kernel_rt_sigreturn:
	mov	x8, #139
	svc	#0
	.size	__kernel_rt_sigreturn, . - __kernel_rt_sigreturn
