// Counting windows and profil(2) (kmod/core/window_math.c) on the host,
// beyond ktests/window_math_kunit.c's cases (which run here too):
// glibc's profil_count as a reference over random inputs, and every pc of
// the documented scales and of address blocks at the edges.
#include <gtest/gtest.h>

#include <random>

#include "core/window_math.h"

namespace {

tprof_window_add Profil(uint64_t off, uint64_t bufsiz, uint32_t scale, uint32_t flags = 0) {
  tprof_window_add a{};
  a.kind = TPROF_WINDOW_PROFIL;
  a.start = off;
  a.length = bufsiz;
  a.scale = scale;
  a.flags = flags;
  return a;
}

tprof_window_add Addr(uint64_t start, uint64_t len, uint32_t block) {
  tprof_window_add a{};
  a.kind = TPROF_WINDOW_PROCESS;
  a.start = start;
  a.length = len;
  a.block_bytes = block;
  return a;
}

// glibc sysdeps/posix/profil.c, profil_count(), with 128-bit arithmetic.
bool GlibcIndex(uint64_t off, uint32_t scale, uint64_t nsamples, uint64_t pc, u64* out) {
  if (pc < off) return false;
  unsigned __int128 i = (pc - off) / 2;
  i = i * scale / 65536;
  if (i >= nsamples) return false;
  *out = static_cast<u64>(i);
  return true;
}

TEST(CoreWindowMath, ProfilMatchesGlibcOverRandomInputs) {
  std::mt19937_64 rng(7);
  for (int n = 0; n < 200000; ++n) {
    uint64_t off = rng() & 0xffffffffffffULL;
    uint32_t scale = 3 + rng() % (0x10000 - 2);
    if (n % 7 == 0) scale = 0x10000;
    if (n % 11 == 0) scale = 0x8000;
    uint64_t bufsiz = rng() % (1 << 20);
    uint64_t pc = off + (rng() % 4 == 0 ? rng() : rng() % (bufsiz * 4 + 8));
    if (n % 13 == 0) pc = off - 1 - rng() % 4096;
    tprof_window_add a = Profil(off, bufsiz, scale);
    tprof_wm_geom g;
    ASSERT_EQ(tprof_wm_check_add(&a, &g), 0);
    u64 want = 0, got = 0;
    bool in_want = GlibcIndex(off, scale, bufsiz / 2, pc, &want);
    bool in_got = tprof_wm_index(&g, pc, &got);
    ASSERT_EQ(in_got, in_want) << "off " << off << " scale " << scale << " pc " << pc;
    if (in_want) {
      ASSERT_EQ(got, want);
    }
  }
}

TEST(CoreWindowMath, ProfilDocumentedScales) {
  tprof_wm_geom g;
  u64 i = 0;
  // 0x10000: 1-1 mapping of 2-byte units to 16-bit cells.
  tprof_window_add a = Profil(0x1000, 4096, 0x10000);
  ASSERT_EQ(tprof_wm_check_add(&a, &g), 0);
  for (uint64_t pc = 0x1000; pc < 0x1000 + 4096; ++pc) {
    ASSERT_TRUE(tprof_wm_index(&g, pc, &i));
    EXPECT_EQ(i, (pc - 0x1000) / 2);
  }
  EXPECT_FALSE(tprof_wm_index(&g, 0x1000 + 4096, &i));
  // 0x8000: each 4-byte instruction to one 16-bit cell; 32-bit cells: two.
  a = Profil(0x1000, 4096, 0x8000);
  ASSERT_EQ(tprof_wm_check_add(&a, &g), 0);
  for (uint64_t pc = 0x1000; pc < 0x1000 + 8192; ++pc) {
    ASSERT_TRUE(tprof_wm_index(&g, pc, &i));
    EXPECT_EQ(i, (pc - 0x1000) / 4);
  }
  a = Profil(0x1000, 4096, 0x8000, TPROF_WINDOW_CELLS32);
  ASSERT_EQ(tprof_wm_check_add(&a, &g), 0);
  EXPECT_EQ(g.nr_cells, 1024u);
  for (uint64_t pc = 0x1000; pc < 0x1000 + 8192; ++pc) {
    ASSERT_TRUE(tprof_wm_index(&g, pc, &i));
    EXPECT_EQ(i, (pc - 0x1000) / 8);
  }
  // 0x0002: everything from offset on in cell 0.
  a = Profil(0x1000, 2, 2);
  ASSERT_EQ(tprof_wm_check_add(&a, &g), 0);
  EXPECT_TRUE(tprof_wm_index(&g, 0x1000, &i));
  EXPECT_TRUE(tprof_wm_index(&g, ~0ULL, &i));
  EXPECT_EQ(i, 0u);
  EXPECT_FALSE(tprof_wm_index(&g, 0xfff, &i));
  // 0 and 1 turn it off.
  for (uint32_t s : {0u, 1u}) {
    a = Profil(0x1000, 4096, s);
    ASSERT_EQ(tprof_wm_check_add(&a, &g), 0);
    EXPECT_TRUE(g.off);
    EXPECT_FALSE(tprof_wm_index(&g, 0x1000, &i));
  }
  // bufsiz 0: ineffective, nothing in range.
  a = Profil(0x1000, 0, 0x10000);
  ASSERT_EQ(tprof_wm_check_add(&a, &g), 0);
  EXPECT_FALSE(tprof_wm_index(&g, 0x1000, &i));
}

TEST(CoreWindowMath, AddressBlocksAndEdges) {
  tprof_wm_geom g;
  u64 i = 0;
  tprof_window_add a = Addr(0x10000, 1000, 64);
  ASSERT_EQ(tprof_wm_check_add(&a, &g), 0);
  EXPECT_EQ(g.nr_cells, 16u);  // ceil(1000 / 64)
  for (uint64_t pc = 0xff00; pc < 0x10500; ++pc) {
    bool in = tprof_wm_index(&g, pc, &i);
    ASSERT_EQ(in, pc >= 0x10000 && pc < 0x10000 + 1000) << pc;
    if (in) {
      EXPECT_EQ(i, (pc - 0x10000) / 64);
    }
  }
  a = Addr(0, ~0ULL, 1u << 31);
  EXPECT_EQ(tprof_wm_check_add(&a, &g), -EINVAL) << "too many cells";
  a = Addr(1, ~0ULL, 1u << 31);
  EXPECT_EQ(tprof_wm_check_add(&a, &g), -EINVAL) << "wraps";
  a = Addr(0, 4096, 0);
  EXPECT_EQ(tprof_wm_check_add(&a, &g), -EINVAL);
  a = Addr(0, 4096, 1);
  ASSERT_EQ(tprof_wm_check_add(&a, &g), 0);
  EXPECT_EQ(g.nr_cells, 4096u);
}

}  // namespace
