/* SPDX-License-Identifier: GPL-2.0 */
/* The self page's layout and TSC stamps (metrics*.c own the pages). */
#ifndef TPROF_SELF_PAGE_H
#define TPROF_SELF_PAGE_H

#include <linux/types.h>

struct page;
struct vm_area_struct;
struct tprof_metrics_config;
struct tprof_self_page;

struct tprof_self_page *tprof_self_page_alloc(void);
void tprof_self_page_put(struct tprof_self_page *p);
struct page *tprof_self_page_page(struct tprof_self_page *p);
void tprof_self_page_init(struct tprof_self_page *p, u64 identity, u32 tid,
			  const struct tprof_metrics_config *c);
void tprof_self_page_charge(struct tprof_self_page *p, const u64 *delta);
void tprof_self_page_switch_in(struct tprof_self_page *p);
void tprof_self_page_retire(struct tprof_self_page *p);
int tprof_self_page_check_vma(struct vm_area_struct *vma);

#endif /* TPROF_SELF_PAGE_H */
