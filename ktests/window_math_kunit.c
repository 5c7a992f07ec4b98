// SPDX-License-Identifier: GPL-2.0
/*
 * Counting windows and profil(2) (core/window_math.c): address -> block or
 * out of range, profil's pc -> cell for the documented scales, its 16-bit
 * wrap, and the WINDOW_ADD argument rules.
 */
#include <kunit/test.h>
#include "core/window_math.h"

static struct tprof_window_add wm_addr(u64 start, u64 len, u32 block)
{
	struct tprof_window_add a = {
		.kind = TPROF_WINDOW_PROCESS, .start = start, .length = len,
		.block_bytes = block,
	};
	return a;
}

static struct tprof_window_add wm_profil(u64 off, u64 bufsiz, u32 scale, u32 flags)
{
	struct tprof_window_add a = {
		.kind = TPROF_WINDOW_PROFIL, .start = off, .length = bufsiz,
		.scale = scale, .flags = flags,
	};
	return a;
}

static void wm_address_blocks_and_out_of_range(struct kunit *test)
{
	struct tprof_window_add a = wm_addr(0x1000, 0x100, 64);
	struct tprof_wm_geom g;
	u64 i = 99;

	KUNIT_ASSERT_EQ(test, tprof_wm_check_add(&a, &g), 0);
	KUNIT_EXPECT_EQ(test, g.nr_cells, 4ULL);
	KUNIT_EXPECT_EQ(test, g.cell_bytes, 4U);
	KUNIT_EXPECT_FALSE(test, tprof_wm_index(&g, 0xfff, &i));
	KUNIT_EXPECT_TRUE(test, tprof_wm_index(&g, 0x1000, &i));
	KUNIT_EXPECT_EQ(test, i, 0ULL);
	KUNIT_EXPECT_TRUE(test, tprof_wm_index(&g, 0x103f, &i));
	KUNIT_EXPECT_EQ(test, i, 0ULL);
	KUNIT_EXPECT_TRUE(test, tprof_wm_index(&g, 0x1040, &i));
	KUNIT_EXPECT_EQ(test, i, 1ULL);
	KUNIT_EXPECT_TRUE(test, tprof_wm_index(&g, 0x10ff, &i));
	KUNIT_EXPECT_EQ(test, i, 3ULL);
	KUNIT_EXPECT_FALSE(test, tprof_wm_index(&g, 0x1100, &i));
	/* A partial last block still counts. */
	a = wm_addr(0, 65, 64);
	KUNIT_ASSERT_EQ(test, tprof_wm_check_add(&a, &g), 0);
	KUNIT_EXPECT_EQ(test, g.nr_cells, 2ULL);
	/* The top of the address space, without overflow. */
	a = wm_addr(~0ULL - 127, 128, 32);
	KUNIT_ASSERT_EQ(test, tprof_wm_check_add(&a, &g), 0);
	KUNIT_EXPECT_TRUE(test, tprof_wm_index(&g, ~0ULL, &i));
	KUNIT_EXPECT_EQ(test, i, 3ULL);
}

static void wm_add_rules(struct kunit *test)
{
	struct tprof_window_add a;
	struct tprof_wm_geom g;

	a = wm_addr(0, 4096, 48);	/* not a power of two */
	KUNIT_EXPECT_EQ(test, tprof_wm_check_add(&a, &g), -EINVAL);
	a = wm_addr(0, 0, 64);
	KUNIT_EXPECT_EQ(test, tprof_wm_check_add(&a, &g), -EINVAL);
	a = wm_addr(~0ULL - 10, 12, 4);	/* wraps */
	KUNIT_EXPECT_EQ(test, tprof_wm_check_add(&a, &g), -EINVAL);
	a = wm_addr(0, (u64)TPROF_WINDOW_MAX_CELLS * 4 + 1, 4);
	KUNIT_EXPECT_EQ(test, tprof_wm_check_add(&a, &g), -EINVAL);
	a = wm_addr(0, (u64)TPROF_WINDOW_MAX_CELLS * 4, 4);
	KUNIT_EXPECT_EQ(test, tprof_wm_check_add(&a, &g), 0);
	a = wm_addr(0, 64, 64);
	a.kind = TPROF_WINDOW_KERNEL;
	a.pid = 1;
	KUNIT_EXPECT_EQ(test, tprof_wm_check_add(&a, &g), -EINVAL);
	a = wm_addr(0, 64, 64);
	a.resv[1] = 1;
	KUNIT_EXPECT_EQ(test, tprof_wm_check_add(&a, &g), -EINVAL);
	a = wm_addr(0, 64, 64);
	a.kind = 9;
	KUNIT_EXPECT_EQ(test, tprof_wm_check_add(&a, &g), -EINVAL);
	a = wm_profil(0, 64, 0x10001, 0);
	KUNIT_EXPECT_EQ(test, tprof_wm_check_add(&a, &g), -EINVAL);
	a = wm_profil(0, 64, 0x8000, 4);
	KUNIT_EXPECT_EQ(test, tprof_wm_check_add(&a, &g), -EINVAL);
	a = wm_profil(0, 64, 0x8000, 0);
	a.block_bytes = 2;
	KUNIT_EXPECT_EQ(test, tprof_wm_check_add(&a, &g), -EINVAL);
	/* bufsiz in bytes: 2-byte cells, or 4-byte ones; odd bytes unused. */
	a = wm_profil(0, 65, 0x8000, 0);
	KUNIT_ASSERT_EQ(test, tprof_wm_check_add(&a, &g), 0);
	KUNIT_EXPECT_EQ(test, g.nr_cells, 32ULL);
	KUNIT_EXPECT_EQ(test, g.cell_bytes, 2U);
	a = wm_profil(0, 65, 0x8000, TPROF_WINDOW_CELLS32);
	KUNIT_ASSERT_EQ(test, tprof_wm_check_add(&a, &g), 0);
	KUNIT_EXPECT_EQ(test, g.nr_cells, 16ULL);
	KUNIT_EXPECT_EQ(test, g.cell_bytes, 4U);
	/* Scale 0 or 1: accepted, off. */
	a = wm_profil(0, 64, 1, 0);
	KUNIT_ASSERT_EQ(test, tprof_wm_check_add(&a, &g), 0);
	KUNIT_EXPECT_TRUE(test, g.off);
}

static void wm_profil_documented_scales(struct kunit *test)
{
	struct tprof_window_add a = wm_profil(0x400000, 1 << 20, 0x10000, 0);
	struct tprof_wm_geom g;
	u64 i = 0;

	/* 0x10000: every 2 bytes of text to one 16-bit cell (4-byte insn: 2 cells). */
	KUNIT_ASSERT_EQ(test, tprof_wm_check_add(&a, &g), 0);
	KUNIT_EXPECT_TRUE(test, tprof_wm_index(&g, 0x400000, &i));
	KUNIT_EXPECT_EQ(test, i, 0ULL);
	KUNIT_EXPECT_TRUE(test, tprof_wm_index(&g, 0x400001, &i));
	KUNIT_EXPECT_EQ(test, i, 0ULL);
	KUNIT_EXPECT_TRUE(test, tprof_wm_index(&g, 0x400004, &i));
	KUNIT_EXPECT_EQ(test, i, 2ULL);
	KUNIT_EXPECT_TRUE(test, tprof_wm_index(&g, 0x400102, &i));
	KUNIT_EXPECT_EQ(test, i, 0x81ULL);
	KUNIT_EXPECT_FALSE(test, tprof_wm_index(&g, 0x3fffff, &i));
	KUNIT_EXPECT_FALSE(test, tprof_wm_index(&g, 0x400000 + (1 << 20), &i));
	/* 0x8000: a 4-byte instruction per 16-bit cell. */
	a = wm_profil(0x400000, 1 << 20, 0x8000, 0);
	KUNIT_ASSERT_EQ(test, tprof_wm_check_add(&a, &g), 0);
	KUNIT_EXPECT_TRUE(test, tprof_wm_index(&g, 0x400003, &i));
	KUNIT_EXPECT_EQ(test, i, 0ULL);
	KUNIT_EXPECT_TRUE(test, tprof_wm_index(&g, 0x400004, &i));
	KUNIT_EXPECT_EQ(test, i, 1ULL);
	KUNIT_EXPECT_TRUE(test, tprof_wm_index(&g, 0x400400, &i));
	KUNIT_EXPECT_EQ(test, i, 0x100ULL);
	/* 0x8000 with 32-bit cells: two 4-byte instructions per cell. */
	a = wm_profil(0x400000, 1 << 20, 0x8000, TPROF_WINDOW_CELLS32);
	KUNIT_ASSERT_EQ(test, tprof_wm_check_add(&a, &g), 0);
	KUNIT_EXPECT_TRUE(test, tprof_wm_index(&g, 0x400004, &i));
	KUNIT_EXPECT_EQ(test, i, 0ULL);
	KUNIT_EXPECT_TRUE(test, tprof_wm_index(&g, 0x400008, &i));
	KUNIT_EXPECT_EQ(test, i, 1ULL);
	/* 0x0002: the whole region from offset in the first cell. */
	a = wm_profil(0x400000, 2, 2, 0);
	KUNIT_ASSERT_EQ(test, tprof_wm_check_add(&a, &g), 0);
	KUNIT_EXPECT_TRUE(test, tprof_wm_index(&g, 0x400000, &i));
	KUNIT_EXPECT_EQ(test, i, 0ULL);
	KUNIT_EXPECT_TRUE(test, tprof_wm_index(&g, 0x7fffffffffffULL, &i));
	KUNIT_EXPECT_EQ(test, i, 0ULL);
	KUNIT_EXPECT_FALSE(test, tprof_wm_index(&g, 0x3fffff, &i));
	/* 0 and 1: off. */
	a = wm_profil(0x400000, 64, 0, 0);
	KUNIT_ASSERT_EQ(test, tprof_wm_check_add(&a, &g), 0);
	KUNIT_EXPECT_FALSE(test, tprof_wm_index(&g, 0x400000, &i));
	/* A huge distance neither overflows nor lands in the buffer. */
	a = wm_profil(0, 1 << 20, 0x10000, 0);
	KUNIT_ASSERT_EQ(test, tprof_wm_check_add(&a, &g), 0);
	KUNIT_EXPECT_FALSE(test, tprof_wm_index(&g, ~0ULL, &i));
}

static void wm_profil_cell_pc_inverts(struct kunit *test)
{
	static const u32 scales[] = { 0x10000, 0x8000, 0x5555, 0x4000, 0x1234, 0x100, 3 };
	u64 pc = 0, idx, c;
	size_t s;

	for (s = 0; s < ARRAY_SIZE(scales); s++) {
		for (c = 0; c < 300; c++) {
			KUNIT_ASSERT_TRUE(test, tprof_wm_profil_cell_pc(0x1000, scales[s], c, &pc));
			KUNIT_ASSERT_TRUE(test, tprof_wm_profil_index16(0x1000, scales[s], pc, &idx));
			KUNIT_EXPECT_EQ(test, idx, c);
			if (pc >= 0x1002) {
				tprof_wm_profil_index16(0x1000, scales[s], pc - 2, &idx);
				KUNIT_EXPECT_LT(test, idx, c);
			}
		}
	}
}

static void wm_profil_cells_wrap_at_16_bits(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, tprof_wm_cell_value(65535, 2), 65535U);
	KUNIT_EXPECT_EQ(test, tprof_wm_cell_value(65536, 2), 0U);
	KUNIT_EXPECT_EQ(test, tprof_wm_cell_value(65536 + 7, 2), 7U);
	KUNIT_EXPECT_EQ(test, tprof_wm_cell_value(65536 + 7, 4), 65543U);
	KUNIT_EXPECT_EQ(test, tprof_wm_cell_value(0xffffffffU, 4), 0xffffffffU);
}

static struct kunit_case tprof_window_math_cases[] = {
	KUNIT_CASE(wm_address_blocks_and_out_of_range),
	KUNIT_CASE(wm_add_rules),
	KUNIT_CASE(wm_profil_documented_scales),
	KUNIT_CASE(wm_profil_cell_pc_inverts),
	KUNIT_CASE(wm_profil_cells_wrap_at_16_bits),
	{}
};

static struct kunit_suite tprof_window_math_suite = {
	.name = "tprof_window_math",
	.test_cases = tprof_window_math_cases,
};
kunit_test_suites(&tprof_window_math_suite);
