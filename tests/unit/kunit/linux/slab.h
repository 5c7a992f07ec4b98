/* SPDX-License-Identifier: GPL-2.0 */
/* The KUnit suites' allocations come from kunit/test.h on the host. */
