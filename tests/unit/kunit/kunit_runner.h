/* SPDX-License-Identifier: GPL-2.0 */
/* The host's KUnit runner (kunit_runner.c), called by kunit_gtest.cc. */
#ifndef TPROF_HOST_KUNIT_RUNNER_H
#define TPROF_HOST_KUNIT_RUNNER_H

#ifdef __cplusplus
extern "C" {
#endif

struct kunit_case;

/* kunit/test.h declares what the runner's caller implements. */
void tprof_kunit_run(const struct kunit_case *c);

#ifdef __cplusplus
}
#endif

#endif /* TPROF_HOST_KUNIT_RUNNER_H */
