// libtprofctl's counting-window helpers on the host: spec parsing, the
// FILE.windows text format, cell addresses; and the ABI 1.3 layouts.
#include <gtest/gtest.h>

#include <cstddef>

#include "tprof/device/windows.h"

namespace tprof {
namespace {

TEST(Windows, AbiLayoutIsPinned) {
  EXPECT_EQ(sizeof(tprof_window_add), 72u);
  EXPECT_EQ(sizeof(tprof_window_info), 104u);
  EXPECT_EQ(sizeof(tprof_window_read), 160u);
  EXPECT_EQ(sizeof(tprof_window_list), 32u);
  EXPECT_EQ(offsetof(tprof_window_add, id), 36u);
  EXPECT_EQ(offsetof(tprof_window_read, info), 32u);
  EXPECT_EQ(_IOC_NR(TPROF_IOC_WINDOW_ADD), 0x30u);
  EXPECT_EQ(_IOC_SIZE(TPROF_IOC_WINDOW_READ), sizeof(tprof_window_read));
  EXPECT_GE(TPROF_ABI_MINOR, 3) << "windows came with ABI 1.3";
}

TEST(Windows, ParsesSpecs) {
  auto k = ParseWindowSpec("kernel:0xffffffff81000000:0x1000:64");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->kind, uint32_t(TPROF_WINDOW_KERNEL));
  EXPECT_EQ(k->start, 0xffffffff81000000ULL);
  EXPECT_EQ(k->length, 0x1000u);
  EXPECT_EQ(k->block_bytes, 64u);
  auto p = ParseWindowSpec("pid=42:4096:100:4");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kind, uint32_t(TPROF_WINDOW_PROCESS));
  EXPECT_EQ(p->pid, 42u);
  for (const char* bad : {"kernel:1:2", "pid=x:1:2:4", "user:1:2:4", "kernel:1:2:0x100000000",
                          "kernel:-1:2:4", "pid=1:1:2:4:5"})
    EXPECT_FALSE(ParseWindowSpec(bad)) << bad;
  auto f = ParseProfilSpec("7:0x400000:0x8000:4096:32");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, uint32_t(TPROF_WINDOW_PROFIL));
  EXPECT_EQ(f->pid, 7u);
  EXPECT_EQ(f->start, 0x400000u);
  EXPECT_EQ(f->scale, 0x8000u);
  EXPECT_EQ(f->length, 4096u);
  EXPECT_EQ(f->flags, uint32_t(TPROF_WINDOW_CELLS32));
  EXPECT_FALSE(ParseProfilSpec("7:0x400000:0x8000:4096:16"));
  EXPECT_FALSE(ParseProfilSpec("7:0x400000:0x8000"));
}

TEST(Windows, FileFormatRoundTrips) {
  WindowCounts a;
  a.info.id = 0;
  a.info.kind = TPROF_WINDOW_PROCESS;
  a.info.pid = 9;
  a.info.start = 0x401000;
  a.info.length = 256;
  a.info.block_bytes = 64;
  a.info.nr_cells = 4;
  a.info.cell_bytes = 4;
  a.info.in_range = 10;
  a.info.out_of_range = 3;
  a.info.wait = 1;
  a.info.nr_procs = 1;
  a.cells = {0, 7, 3, 0};
  WindowCounts b;
  b.info.id = 1;
  b.info.kind = TPROF_WINDOW_PROFIL;
  b.info.start = 0x1000;
  b.info.length = 4;
  b.info.scale = 2;
  b.info.flags = TPROF_WINDOW_OFF;
  b.info.nr_cells = 2;
  b.info.cell_bytes = 2;
  b.cells = {0, 0};
  auto back = ParseWindows(FormatWindows({a, b}));
  ASSERT_TRUE(back) << back.error().message();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ(0, memcmp(&(*back)[0].info, &a.info, sizeof(a.info)));
  EXPECT_EQ(0, memcmp(&(*back)[1].info, &b.info, sizeof(b.info)));
  EXPECT_EQ((*back)[0].cells, a.cells);
  EXPECT_EQ((*back)[1].cells, b.cells);
  EXPECT_FALSE(ParseWindows("tprof-windows 1\nc 0 1\n"));
  EXPECT_FALSE(ParseWindows("nonsense\n"));
}

TEST(Windows, CellAddresses) {
  tprof_window_info i{};
  i.kind = TPROF_WINDOW_PROFIL;
  i.start = 0x1000;
  i.scale = 0x8000;
  i.cell_bytes = 2;
  uint64_t addr = 0;
  ASSERT_TRUE(WindowCellAddress(i, 3, &addr));
  EXPECT_EQ(addr, 0x100cu);
  i.cell_bytes = 4;
  ASSERT_TRUE(WindowCellAddress(i, 3, &addr));
  EXPECT_EQ(addr, 0x1018u);
  i.scale = 0x10000;
  i.cell_bytes = 2;
  ASSERT_TRUE(WindowCellAddress(i, 3, &addr));
  EXPECT_EQ(addr, 0x1006u);
  i.kind = TPROF_WINDOW_KERNEL;
  i.block_bytes = 64;
  ASSERT_TRUE(WindowCellAddress(i, 3, &addr));
  EXPECT_EQ(addr, 0x1000u + 192);
}

}  // namespace
}  // namespace tprof
