/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit's test API on the host: the KUnit suites of kmod/core's units
 * (ktests/<unit>_kunit.c) compile unchanged against this header and run
 * as GoogleTest tests in tests/unit (kunit_gtest.cc registers each suite's
 * cases as "KUnit_<suite>.<case>"), so each unit's cases are written once
 * and run in the KUnit kernel and on the host under ASan/UBSan.
 *
 * Only what those suites use: expectations and assertions on integers,
 * booleans and pointers, array parameters, allocations freed after the
 * case. A failed expectation reports and goes on; a failed assertion ends
 * the case (longjmp back to tprof_kunit_run(), within C frames only).
 */
#ifndef TPROF_HOST_KUNIT_TEST_H
#define TPROF_HOST_KUNIT_TEST_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include "core/core_env.h"

#define GFP_KERNEL 0
/* Kernel names the suites use beside KUnit's. */
#ifndef U32_MAX
#define U32_MAX UINT32_MAX
#define U64_MAX UINT64_MAX
#define S64_MAX INT64_MAX
#define S64_MIN INT64_MIN
#endif

static inline char *strreplace(char *str, char old, char new_)
{
	char *s = str;

	for (; *s; ++s)
		if (*s == old)
			*s = new_;
	return s;
}

static inline ssize_t strscpy(char *dst, const char *src, size_t size)
{
	size_t n = strnlen(src, size);

	if (!size)
		return -E2BIG;
	if (n == size) {
		memcpy(dst, src, size - 1);
		dst[size - 1] = '\0';
		return -E2BIG;
	}
	memcpy(dst, src, n + 1);
	return (ssize_t)n;
}
#define KUNIT_PARAM_DESC_SIZE 128

struct tprof_kunit_alloc;

struct kunit {
	void *param_value;
	const char *param_desc;
	jmp_buf abort;
	struct tprof_kunit_alloc *allocs;	/* freed after the case */
};

struct kunit_case {
	void (*run_case)(struct kunit *test);
	const char *name;
	const void *(*generate_params)(const void *prev, char *desc);
};

struct kunit_suite {
	const char *name;
	struct kunit_case *test_cases;
};

#define KUNIT_CASE(fn) { .run_case = fn, .name = #fn }
#define KUNIT_CASE_PARAM(fn, gen) { .run_case = fn, .name = #fn, .generate_params = gen }

#define KUNIT_ARRAY_PARAM(name, array, get_desc)				\
	static const void *name##_gen_params(const void *prev, char *desc)	\
	{									\
		__typeof__((array)[0]) *next_ = prev ?				\
			((__typeof__(next_))prev) + 1 : (array);		\
		if ((size_t)(next_ - (array)) < ARRAY_SIZE(array)) {		\
			void (*get_desc_)(__typeof__(next_), char *) = get_desc; \
			if (get_desc_)						\
				get_desc_(next_, desc);				\
			return next_;						\
		}								\
		return NULL;							\
	}

/* Registers the file's suites with GoogleTest before main(). */
void tprof_kunit_register(struct kunit_suite **suites);
#define kunit_test_suites(...)							\
	static struct kunit_suite *tprof_kunit_suites_[] = { __VA_ARGS__, NULL }; \
	__attribute__((constructor)) static void tprof_kunit_register_(void)	\
	{									\
		tprof_kunit_register(tprof_kunit_suites_);			\
	}

void *kunit_kzalloc(struct kunit *test, size_t size, int gfp);
void *kunit_kcalloc(struct kunit *test, size_t n, size_t size, int gfp);

/* Reports a failed check (kunit_gtest.cc); a fatal one then ends the case. */
void tprof_kunit_fail(struct kunit *test, const char *file, int line,
		      const char *check, unsigned long long a,
		      unsigned long long b, const char *msg);

#define TPROF_KUNIT_FAIL(test, fatal, check, a, b, msg)			\
	do {								\
		tprof_kunit_fail((test), __FILE__, __LINE__, (check),	\
				 (unsigned long long)(a),		\
				 (unsigned long long)(b), (msg));	\
		if (fatal)						\
			longjmp((test)->abort, 1);			\
	} while (0)

#define TPROF_KUNIT_BINARY(test, fatal, a, op, b, msg)			\
	do {								\
		__typeof__(a) a_ = (a);					\
		__typeof__(b) b_ = (b);					\
		if (!(a_ op b_))					\
			TPROF_KUNIT_FAIL(test, fatal, #a " " #op " " #b,	\
					 (uintptr_t)a_, (uintptr_t)b_, msg); \
	} while (0)

#define TPROF_KUNIT_BOOL(test, fatal, x, want)				\
	do {								\
		bool v_ = (x);						\
		if (v_ != (want))					\
			TPROF_KUNIT_FAIL(test, fatal, (want) ? #x : "!(" #x ")", \
					 v_, (want), NULL);		\
	} while (0)

#define KUNIT_EXPECT_EQ(test, a, b) TPROF_KUNIT_BINARY(test, 0, a, ==, b, NULL)
#define KUNIT_EXPECT_EQ_MSG(test, a, b, fmt, ...) TPROF_KUNIT_BINARY(test, 0, a, ==, b, fmt)
#define KUNIT_EXPECT_NE(test, a, b) TPROF_KUNIT_BINARY(test, 0, a, !=, b, NULL)
#define KUNIT_EXPECT_LT(test, a, b) TPROF_KUNIT_BINARY(test, 0, a, <, b, NULL)
#define KUNIT_EXPECT_PTR_EQ(test, a, b) TPROF_KUNIT_BINARY(test, 0, (const void *)(a), ==, (const void *)(b), NULL)
#define KUNIT_EXPECT_NULL(test, p) TPROF_KUNIT_BINARY(test, 0, (const void *)(p), ==, (const void *)NULL, NULL)
#define KUNIT_EXPECT_TRUE(test, x) TPROF_KUNIT_BOOL(test, 0, x, true)
#define KUNIT_EXPECT_FALSE(test, x) TPROF_KUNIT_BOOL(test, 0, x, false)
#define KUNIT_ASSERT_EQ(test, a, b) TPROF_KUNIT_BINARY(test, 1, a, ==, b, NULL)
#define KUNIT_ASSERT_NE(test, a, b) TPROF_KUNIT_BINARY(test, 1, a, !=, b, NULL)
#define KUNIT_ASSERT_GE(test, a, b) TPROF_KUNIT_BINARY(test, 1, a, >=, b, NULL)
#define KUNIT_ASSERT_LE(test, a, b) TPROF_KUNIT_BINARY(test, 1, a, <=, b, NULL)
#define KUNIT_ASSERT_NOT_NULL(test, p) TPROF_KUNIT_BINARY(test, 1, (const void *)(p), !=, (const void *)NULL, NULL)
#define KUNIT_ASSERT_TRUE(test, x) TPROF_KUNIT_BOOL(test, 1, x, true)

#endif /* TPROF_HOST_KUNIT_TEST_H */
