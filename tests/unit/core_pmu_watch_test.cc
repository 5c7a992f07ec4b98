// Watchpoint pieces (kmod/core/pmu_rules.c tprof_pmu_watch_pieces) on the
// host: x86's naturally aligned cut is the fewest pieces, arm64's one per
// doubleword; both cover the range exactly; the bounds are EINVAL.
#include <gtest/gtest.h>

#include <vector>

#include "core/pmu_rules.h"

namespace {

std::vector<std::pair<u64, u64>> Cut(u64 addr, u64 len, bool dword) {
  tprof_pmu_piece p[TPROF_PMU_MAX_WATCH_PIECES];
  int n = tprof_pmu_watch_pieces(addr, len, dword, p);
  std::vector<std::pair<u64, u64>> out;
  for (int i = 0; i < n; i++) out.emplace_back(p[i].addr, p[i].len);
  return out;
}

using V = std::vector<std::pair<u64, u64>>;

TEST(CorePmuWatch, X86CutsIntoFewestNaturallyAlignedPieces) {
  EXPECT_EQ(Cut(0x1000, 8, false), (V{{0x1000, 8}}));
  EXPECT_EQ(Cut(0x1000, 32, false), (V{{0x1000, 8}, {0x1008, 8}, {0x1010, 8}, {0x1018, 8}}));
  EXPECT_EQ(Cut(0x1000, 24, false), (V{{0x1000, 8}, {0x1008, 8}, {0x1010, 8}}));
  // Bytes 3..15: 1 + 4 + 8.
  EXPECT_EQ(Cut(0x1003, 13, false), (V{{0x1003, 1}, {0x1004, 4}, {0x1008, 8}}));
  EXPECT_EQ(Cut(0x1002, 3, false), (V{{0x1002, 2}, {0x1004, 1}}));
  EXPECT_EQ(Cut(0x1004, 8, false), (V{{0x1004, 4}, {0x1008, 4}}));
  EXPECT_EQ(Cut(0x1001, 1, false), (V{{0x1001, 1}}));
}

TEST(CorePmuWatch, Arm64CutsOnePiecePerDoubleword) {
  EXPECT_EQ(Cut(0x1000, 32, true), (V{{0x1000, 8}, {0x1008, 8}, {0x1010, 8}, {0x1018, 8}}));
  EXPECT_EQ(Cut(0x1003, 13, true), (V{{0x1003, 5}, {0x1008, 8}}));
  EXPECT_EQ(Cut(0x1001, 3, true), (V{{0x1001, 3}}));
  EXPECT_EQ(Cut(0x1005, 27, true), (V{{0x1005, 3}, {0x1008, 8}, {0x1010, 8}, {0x1018, 8}}));
  EXPECT_EQ(tprof_pmu_watch_pieces(0x1005, 30, true, nullptr), -EINVAL);  // 5 doublewords
}

// Every split covers [addr, addr + len) exactly, each piece one debug
// register's shape, and the count is the minimum the shape allows.
TEST(CorePmuWatch, EveryRangeIsCoveredExactlyOrRefused) {
  for (bool dword : {false, true})
    for (u64 addr = 0x1000; addr < 0x1010; addr++)
      for (u64 len = 0; len <= TPROF_PMU_MAX_WATCH_LEN + 1; len++) {
        tprof_pmu_piece p[TPROF_PMU_MAX_WATCH_PIECES];
        int n = tprof_pmu_watch_pieces(addr, len, dword, p);
        // The minimum: x86 greedy from the start (any cover by aligned
        // powers of two needs as many), arm64 the doublewords touched.
        int want = 0;
        if (len) {
          if (dword) {
            want = int(((addr + len - 1) >> 3) - (addr >> 3) + 1);
          } else {
            for (u64 pos = addr; pos < addr + len; want++) {
              u64 s = 8;
              while ((pos & (s - 1)) || s > addr + len - pos) s >>= 1;
              pos += s;
            }
          }
        }
        if (len == 0 || len > TPROF_PMU_MAX_WATCH_LEN || want > TPROF_PMU_MAX_WATCH_PIECES) {
          EXPECT_EQ(n, -EINVAL) << addr << "+" << len;
          continue;
        }
        ASSERT_EQ(n, want) << addr << "+" << len;
        u64 pos = addr;
        for (int i = 0; i < n; i++) {
          EXPECT_EQ(p[i].addr, pos);
          if (dword) {
            EXPECT_EQ(p[i].addr >> 3, (p[i].addr + p[i].len - 1) >> 3);  // one doubleword
          } else {
            EXPECT_TRUE(p[i].len == 1 || p[i].len == 2 || p[i].len == 4 || p[i].len == 8);
            EXPECT_EQ(p[i].addr % p[i].len, 0u);
          }
          pos += p[i].len;
        }
        EXPECT_EQ(pos, addr + len);
      }
}

TEST(CorePmuWatch, WrappingAndTopOfAddressSpace) {
  EXPECT_EQ(tprof_pmu_watch_pieces(~0ULL - 3, 8, false, nullptr), -EINVAL);
  EXPECT_EQ(tprof_pmu_watch_pieces(~0ULL - 7, 8, false, nullptr), 1);  // ends at 2^64
  EXPECT_EQ(tprof_pmu_watch_pieces(~0ULL - 7, 8, true, nullptr), 1);
}

}  // namespace
