// SPDX-License-Identifier: GPL-2.0
#include "../kmod/core/metrics_config.c"
