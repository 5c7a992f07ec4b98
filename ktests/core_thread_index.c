// SPDX-License-Identifier: GPL-2.0
#include "../kmod/core/thread_index.c"
