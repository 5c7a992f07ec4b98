// SPDX-License-Identifier: GPL-2.0
/*
 * Runs one KUnit case on the host (kunit/test.h): each parameter in turn,
 * a fatal assertion ending the case by longjmp() inside these C frames,
 * and the case's allocations freed after it.
 */
#include <stdlib.h>
#include <string.h>
#include "kunit/test.h"
#include "kunit_runner.h"

/* Cache-line aligned, as the kernel's slab objects of 64 bytes and more are. */
struct tprof_kunit_alloc {
	struct tprof_kunit_alloc *next;
	_Alignas(64) unsigned char mem[];
};

void *kunit_kzalloc(struct kunit *test, size_t size, int gfp)
{
	size_t bytes = (sizeof(struct tprof_kunit_alloc) + size + 63) & ~(size_t)63;
	struct tprof_kunit_alloc *a = aligned_alloc(64, bytes);

	(void)gfp;
	if (!a)
		return NULL;
	memset(a, 0, bytes);
	a->next = test->allocs;
	test->allocs = a;
	return a->mem;
}

void *kunit_kcalloc(struct kunit *test, size_t n, size_t size, int gfp)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	return kunit_kzalloc(test, n * size, gfp);
}

static void tprof_kunit_run_one(const struct kunit_case *c, void *param,
				const char *desc)
{
	struct kunit test = { .param_value = param, .param_desc = desc };

	if (!setjmp(test.abort))
		c->run_case(&test);
	while (test.allocs) {
		struct tprof_kunit_alloc *a = test.allocs;

		test.allocs = a->next;
		free(a);
	}
}

void tprof_kunit_run(const struct kunit_case *c)
{
	char desc[KUNIT_PARAM_DESC_SIZE];
	const void *param;

	if (!c->generate_params) {
		tprof_kunit_run_one(c, NULL, NULL);
		return;
	}
	desc[0] = '\0';
	for (param = c->generate_params(NULL, desc); param;
	     param = c->generate_params(param, desc)) {
		tprof_kunit_run_one(c, (void *)param, desc);
		desc[0] = '\0';
	}
}
