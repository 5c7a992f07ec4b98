// SPDX-License-Identifier: GPL-2.0
#include "../kmod/core/pmu_rules.c"
