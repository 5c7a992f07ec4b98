// SPDX-License-Identifier: GPL-2.0
/* The module's pure core logic, compiled into the test module unchanged. */
#include "../kmod/core/unwind_walk.c"
