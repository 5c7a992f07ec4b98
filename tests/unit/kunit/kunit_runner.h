/* SPDX-License-Identifier: GPL-2.0 */
/* The host's KUnit runner (kunit_runner.c), called by kunit_gtest.cc. */
#ifndef TPROF_HOST_KUNIT_RUNNER_H
#define TPROF_HOST_KUNIT_RUNNER_H

#ifdef __cplusplus
extern "C" {
#endif

struct kunit_case;
struct kunit_suite;
struct kunit;

void tprof_kunit_run(const struct kunit_case *c);
void tprof_kunit_register(struct kunit_suite **suites);
void tprof_kunit_fail(struct kunit *test, const char *file, int line,
		      const char *check, unsigned long long a,
		      unsigned long long b, const char *msg);

#ifdef __cplusplus
}
#endif

#endif /* TPROF_HOST_KUNIT_RUNNER_H */
