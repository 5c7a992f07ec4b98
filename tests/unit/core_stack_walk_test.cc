// Frame-pointer walks (kmod/core/stack_walk.c) on the host, over a fake
// stack: the chain innermost first and the stop rules.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/stack_walk.h"

namespace {

constexpr uint64_t kBase = 0x10000;

struct FakeStack {
  std::vector<u64> words = std::vector<u64>(64);
  static int Read(void* ctx, u64 addr, u64 rec[2]) {
    auto* st = static_cast<FakeStack*>(ctx);
    if (addr < kBase || addr % 8 || addr + 16 > kBase + 8 * st->words.size()) return -EFAULT;
    size_t i = (addr - kBase) / 8;
    rec[0] = st->words[i];
    rec[1] = st->words[i + 1];
    return 0;
  }
  // n frames 4 words apart from word 2; return address 0x100 + k.
  void Chain(unsigned n) {
    std::fill(words.begin(), words.end(), 0);
    for (unsigned k = 0; k < n; ++k) {
      size_t at = 2 + 4 * k;
      words[at] = k + 1 < n ? kBase + 8 * (at + 4) : 0;
      words[at + 1] = 0x100 + k;
    }
  }
  std::vector<u64> Walk(u64 fp, unsigned max, bool* truncated) {
    std::vector<u64> out(max);
    tprof_fp_walker w{fp, kBase, 8, out.data(), max};
    out.resize(tprof_fp_walk(&w, &FakeStack::Read, this, truncated));
    return out;
  }
};

TEST(CoreStackWalk, ReturnsTheChainInnermostFirst) {
  FakeStack st;
  st.Chain(4);
  bool truncated = true;
  EXPECT_EQ(st.Walk(kBase + 16, 16, &truncated), (std::vector<u64>{0x100, 0x101, 0x102, 0x103}));
  EXPECT_FALSE(truncated);
}

TEST(CoreStackWalk, DepthEndsTheWalkAndIsReported) {
  FakeStack st;
  st.Chain(4);
  bool truncated = false;
  EXPECT_EQ(st.Walk(kBase + 16, 2, &truncated).size(), 2u);
  EXPECT_TRUE(truncated);
  EXPECT_EQ(st.Walk(kBase + 16, 4, &truncated).size(), 4u);
  EXPECT_FALSE(truncated) << "exactly the depth with nothing beyond is not truncated";
}

TEST(CoreStackWalk, StopsAtLoopsMisalignmentFaultsAndZero) {
  FakeStack st;
  bool truncated;
  st.Chain(4);
  st.words[6] = kBase + 16;  // points back down
  EXPECT_EQ(st.Walk(kBase + 16, 16, &truncated).size(), 2u);
  st.Chain(4);
  st.words[6] = kBase + 84;  // misaligned
  EXPECT_EQ(st.Walk(kBase + 16, 16, &truncated).size(), 2u);
  st.Chain(4);
  st.words[6] = kBase + 8 * 64;  // unreadable
  EXPECT_EQ(st.Walk(kBase + 16, 16, &truncated).size(), 2u);
  st.Chain(4);
  st.words[7] = 0;  // no return address
  EXPECT_EQ(st.Walk(kBase + 16, 16, &truncated).size(), 1u);
  EXPECT_TRUE(st.Walk(kBase - 16, 16, &truncated).empty()) << "below the stack pointer";
  EXPECT_TRUE(st.Walk(0, 16, &truncated).empty());
}

}  // namespace
