// Unwind tables from CFI (tprof/analysis/unwind_table.h) and the walk that
// uses them (kmod/core/unwind_walk.c), against known answers: a program
// built without frame pointers captures its own stack and each level's
// return address (build/tests/symfiles/unwind/chain, from
// tests/unit/symfiles/unwind_chain.c), and the walk over the capture must
// name the same callers; Debian's libc gives a well-formed table.
#include "tprof/analysis/unwind_table.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "core/unwind_walk.h"

namespace {

constexpr char kChain[] = "build/tests/symfiles/unwind/chain";
constexpr size_t kChainStackBytes = 16384;

// tests/unit/symfiles/unwind_chain.c's struct chain_capture.
struct ChainCapture {
  uint64_t pc, sp, fp, lr;
  uint64_t bias;
  uint64_t ra[4];
  uint64_t stack_len;
  uint8_t stack[kChainStackBytes];
};

struct WalkEnv {
  const ChainCapture* cap;
  const tprof::UnwindTable* table;
};

int ReadCaptured(void* ctx, u64 addr, u64* val) {
  const ChainCapture* c = static_cast<WalkEnv*>(ctx)->cap;
  if (addr < c->sp || addr + 8 > c->sp + c->stack_len) return -EFAULT;
  std::memcpy(val, c->stack + (addr - c->sp), 8);
  return 0;
}

// Rows of the program only: libc's addresses have no table here.
const tprof_unwind_row* FindInProgram(void* ctx, u64 pc) {
  auto* e = static_cast<WalkEnv*>(ctx);
  if (pc < e->cap->bias) return nullptr;
  const auto& rows = e->table->rows;
  return tprof_unwind_table_find(rows.data(), static_cast<u32>(rows.size()), pc - e->cap->bias);
}

bool RunChain(ChainCapture* cap) {
  char path[] = "/tmp/tprof-unwind-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return false;
  ::close(fd);
  const std::string cmd = std::string(kChain) + " " + path;
  const int rc = std::system(cmd.c_str());
  std::ifstream in(path, std::ios::binary);
  const bool ok = rc == 0 && in.read(reinterpret_cast<char*>(cap), sizeof(*cap)).good();
  ::unlink(path);
  return ok;
}

TEST(UnwindTable, WalksTheFramelessChainItsProgramCaptured) {
  auto table = tprof::BuildUnwindTable(kChain);
  ASSERT_TRUE(table) << table.error().message() << " (make unit-tests builds it)";
  ASSERT_EQ(tprof_unwind_table_check(table->rows.data(), static_cast<u32>(table->rows.size())), 0);
  static ChainCapture cap;
  ASSERT_TRUE(RunChain(&cap));
  ASSERT_GT(cap.stack_len, 256u);

  WalkEnv env{&cap, &*table};
  // uw_b, where uw_c returns to, keeps a frame without a frame pointer:
  // the case a frame-pointer walk gets wrong.
  const tprof_unwind_row* in_b = FindInProgram(&env, cap.ra[1] - 1);
  ASSERT_NE(in_b, nullptr);
  EXPECT_EQ(in_b->cfa_base, TPROF_UNWIND_CFA_SP);
  EXPECT_GT(in_b->cfa_offset, 8) << "uw_b has a stack frame of its own";

  u64 out[16];
  u8 how[16];
  tprof_unwind_walker w{};
  w.regs = {cap.pc, cap.sp, cap.fp, cap.lr};
  w.find = FindInProgram;
  w.read = ReadCaptured;
  w.ctx = &env;
  w.out = out;
  w.how = how;
  w.max = 16;
  w.max_reads = 64;
  tprof_unwind_stop stop{};
  const unsigned int n = tprof_unwind_walk(&w, &stop);
  ASSERT_GE(n, 4u) << "stopped for " << int(stop);
  for (unsigned int i = 0; i < 4; i++) {
    EXPECT_EQ(out[i], cap.ra[i]) << "caller " << i;
    EXPECT_EQ(how[i], TPROF_UNWOUND_CFI) << "caller " << i;
  }
  // Without the table (frame pointers only) the same capture loses them.
  w.find = [](void*, u64) -> const tprof_unwind_row* { return nullptr; };
  const unsigned int by_fp = tprof_unwind_walk(&w, &stop);
  EXPECT_FALSE(by_fp >= 4 && std::equal(out, out + 4, cap.ra))
      << "the chain has frame pointers: the test proves nothing";
}

TEST(UnwindTable, DebianLibcHasAWellFormedTable) {
  auto table = tprof::BuildUnwindTable("/lib/x86_64-linux-gnu/libc.so.6");
  ASSERT_TRUE(table) << table.error().message();
  const auto& rows = table->rows;
  ASSERT_GT(table->functions, 1000u);
  ASSERT_GT(rows.size(), table->functions);
  EXPECT_EQ(tprof_unwind_table_check(rows.data(), static_cast<u32>(rows.size())), 0);
  EXPECT_EQ(rows.back().cfa_base, TPROF_UNWIND_CFA_NONE) << "the table ends in a NONE row";
  // Nearly every row states its rules; the rest fall back to frame pointers.
  EXPECT_LT(table->unsupported * 50, rows.size()) << table->unsupported << " of " << rows.size();
  size_t end_rows = 0, fp_rows = 0;
  for (const tprof_unwind_row& r : rows) {
    if (r.cfa_base == TPROF_UNWIND_CFA_END) end_rows++;
    if (r.cfa_base == TPROF_UNWIND_CFA_FP) fp_rows++;
    if (r.cfa_base == TPROF_UNWIND_CFA_SP || r.cfa_base == TPROF_UNWIND_CFA_FP) {
      EXPECT_EQ(r.ra_rule, TPROF_UNWIND_RA_AT_CFA);
      EXPECT_EQ(r.ra_offset, -8) << "x86-64's return address is just below the CFA";
    }
  }
  EXPECT_GT(end_rows, 0u) << "clone's child and the thread start end their stacks";
  EXPECT_GT(fp_rows, 0u);
}

TEST(UnwindTable, PltStubsUseThePltRule) {
  auto table = tprof::BuildUnwindTable(kChain);
  ASSERT_TRUE(table) << table.error().message();
  size_t plt = 0;
  for (const tprof_unwind_row& r : table->rows)
    if (r.cfa_base == TPROF_UNWIND_CFA_PLT) {
      plt++;
      EXPECT_EQ(r.cfa_offset, 8);
    }
  EXPECT_EQ(plt, 1u) << "the chain's lazy .plt";
}

TEST(UnwindTable, RefusesWhatItCannotRead) {
  auto missing = tprof::BuildUnwindTable("/nonexistent/file");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code().value(), ENOENT);
  auto text = tprof::BuildUnwindTable("/etc/passwd");
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code().value(), EINVAL);
  EXPECT_NE(text.error().message().find("/etc/passwd"), std::string::npos);
}

}  // namespace
