// The ABI header's layout: a change here is an ABI change, so every offset
// a 32- or 64-bit caller relies on is pinned.
#include <linux/tprof.h>

#include <cstddef>

#include <gtest/gtest.h>

namespace {

TEST(Abi, StructSizesArePinned) {
  EXPECT_EQ(sizeof(tprof_counters), 64u);
  EXPECT_EQ(sizeof(tprof_cpu_stats), 72u);
  EXPECT_EQ(sizeof(tprof_info), 176u);
}

TEST(Abi, FieldsAreNaturallyAlignedWithExplicitPadding) {
  EXPECT_EQ(offsetof(tprof_info, features), 24u);
  EXPECT_EQ(offsetof(tprof_info, total), 32u);
  EXPECT_EQ(offsetof(tprof_info, cpu_stats), 96u);
  EXPECT_EQ(offsetof(tprof_info, cpu_stats_count), 104u);
  EXPECT_EQ(offsetof(tprof_info, resv), 112u);
  EXPECT_EQ(offsetof(tprof_cpu_stats, counters), 8u);
  EXPECT_EQ(offsetof(tprof_counters, resv), 40u);
  EXPECT_EQ(alignof(tprof_info), 8u);
}

TEST(Abi, IoctlNumberEncodesMagicSizeAndDirection) {
  EXPECT_EQ(_IOC_TYPE(TPROF_IOC_GET_INFO), TPROF_IOC_MAGIC);
  EXPECT_EQ(_IOC_NR(TPROF_IOC_GET_INFO), 0u);
  EXPECT_EQ(_IOC_SIZE(TPROF_IOC_GET_INFO), sizeof(tprof_info));
  EXPECT_EQ(_IOC_DIR(TPROF_IOC_GET_INFO), unsigned(_IOC_READ | _IOC_WRITE));
}

TEST(Abi, VersionMacrosUnpackModuleVersion) {
  const unsigned v = (2u << 16) | (7u << 8) | 3u;
  EXPECT_EQ(TPROF_VERSION_MAJOR(v), 2u);
  EXPECT_EQ(TPROF_VERSION_MINOR(v), 7u);
  EXPECT_EQ(TPROF_VERSION_PATCH(v), 3u);
}

}  // namespace
