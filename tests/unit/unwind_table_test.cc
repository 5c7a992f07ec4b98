// Unwind tables from CFI (tprof/analysis/unwind_table.h) and the walk that
// uses them (kmod/core/unwind_walk.c), against known answers: a program
// built without frame pointers captures its own stack and each level's
// return address (build/tests/symfiles/unwind/chain, from
// tests/unit/symfiles/unwind_chain.c), and the walk over the capture must
// name the same callers; Debian's libc gives a well-formed table.
#include "tprof/analysis/unwind_table.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "core/unwind_walk.h"
#include "elf_fixtures.h"
#include "tprof/analysis/profile.h"
#include "tprof/analysis/unwind_table_cache.h"

namespace {

constexpr char kChain[] = "build/tests/symfiles/unwind/chain";
// The same chain built with -g but without unwind tables: its functions'
// CFI is in .debug_frame only (the C runtime's stays in .eh_frame); and
// that file without its .debug_frame, where nothing describes them.
constexpr char kDebugFrameChain[] = "build/tests/symfiles/unwind/chain-debug-frame";
constexpr char kChainWithoutCfi[] = "build/tests/symfiles/unwind/chain-without-cfi";
constexpr size_t kChainStackBytes = 16384;

// tests/unit/symfiles/unwind_chain.c's struct chain_capture.
struct ChainCapture {
  uint64_t pc, sp, fp, lr;
  uint64_t bias;
  uint64_t ra[4];
  uint64_t stack_len;
  uint64_t libc_base;
  uint64_t interrupted_pc;
  char libc_path[256];
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

// Runs the chain (with `args`); *maps_text: its /proc/self/maps at the capture.
bool RunChain(ChainCapture* cap, std::string* maps_text = nullptr, const std::string& args = "",
              const char* program = kChain) {
  char path[] = "/tmp/tprof-unwind-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return false;
  ::close(fd);
  const std::string cmd = std::string(program) + " " + path + args;
  const int rc = std::system(cmd.c_str());
  std::ifstream in(path, std::ios::binary);
  const bool ok = rc == 0 && in.read(reinterpret_cast<char*>(cap), sizeof(*cap)).good();
  if (ok && maps_text) maps_text->assign(std::istreambuf_iterator<char>(in), {});
  ::unlink(path);
  return ok;
}

// Walks the capture `program` (a build of the chain) made with the table
// built from `table_file`: the callers must be the ones the chain saw.
void ExpectTheTableWalksTheChain(const char* program, const char* table_file) {
  auto table = tprof::BuildUnwindTable(table_file);
  ASSERT_TRUE(table) << table.error().message() << " (make unit-tests builds it)";
  ASSERT_EQ(tprof_unwind_table_check(table->rows.data(), static_cast<u32>(table->rows.size())), 0);
  static ChainCapture cap;
  ASSERT_TRUE(RunChain(&cap, nullptr, "", program));
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

TEST(UnwindTable, WalksTheFramelessChainItsProgramCaptured) {
  ExpectTheTableWalksTheChain(kChain, kChain);
}

// Code built with -g but without unwind tables: its rows come from
// .debug_frame, and they are the ones .eh_frame gives the same code.
TEST(UnwindTable, DebugFrameDescribesWhatEhFrameDoesNot) {
  auto table = tprof::BuildUnwindTable(kDebugFrameChain);
  ASSERT_TRUE(table) << table.error().message() << " (make unit-tests builds it)";
  EXPECT_GE(table->debug_frame_functions, 5u) << "main and uw_a..uw_d";
  EXPECT_GT(table->functions, table->debug_frame_functions) << "the C runtime's .eh_frame";
  ExpectTheTableWalksTheChain(kDebugFrameChain, kDebugFrameChain);

  // Without .debug_frame nothing describes uw_b: the known answer is not
  // reached by the table, so the test above proved the section's use.
  auto bare = tprof::BuildUnwindTable(kChainWithoutCfi);
  ASSERT_TRUE(bare) << bare.error().message();
  EXPECT_EQ(bare->debug_frame_functions, 0u);
  EXPECT_LT(bare->functions, table->functions);
  static ChainCapture cap;
  ASSERT_TRUE(RunChain(&cap, nullptr, "", kDebugFrameChain));
  const u64 in_b = cap.ra[1] - 1 - cap.bias;
  const tprof_unwind_row* with = tprof_unwind_table_find(
      table->rows.data(), static_cast<u32>(table->rows.size()), in_b);
  const tprof_unwind_row* without = tprof_unwind_table_find(
      bare->rows.data(), static_cast<u32>(bare->rows.size()), in_b);
  ASSERT_NE(with, nullptr);
  EXPECT_EQ(with->cfa_base, TPROF_UNWIND_CFA_SP);
  EXPECT_TRUE(without == nullptr || without->cfa_base == TPROF_UNWIND_CFA_NONE);

  // The same functions' rows from .eh_frame (the chain as built with
  // unwind tables, the same code at the same addresses): equal rules.
  auto eh = tprof::BuildUnwindTable(kChain);
  ASSERT_TRUE(eh) << eh.error().message();
  ASSERT_TRUE(RunChain(&cap, nullptr, "", kChain));
  const u64 eh_in_b = cap.ra[1] - 1 - cap.bias;
  const tprof_unwind_row* from_eh =
      tprof_unwind_table_find(eh->rows.data(), static_cast<u32>(eh->rows.size()), eh_in_b);
  ASSERT_NE(from_eh, nullptr);
  EXPECT_EQ(with->cfa_offset, from_eh->cfa_offset);
  EXPECT_EQ(with->ra_rule, from_eh->ra_rule);
  EXPECT_EQ(with->ra_offset, from_eh->ra_offset);
}

#if defined(__x86_64__)
// Through a signal frame: uw_c raises SIGUSR1 and the handler captures.
// The walk goes from the handler through libc's __restore_rt (a SIGNAL row
// from its CFI expressions) to the interrupted pc, exactly, and on through
// libc's raise to uw_c's callers: the known answer.
TEST(UnwindTable, WalksThroughASignalFrame) {
  auto program = tprof::BuildUnwindTable(kChain);
  ASSERT_TRUE(program) << program.error().message();
  static ChainCapture cap;
  ASSERT_TRUE(RunChain(&cap, nullptr, " --signal"));
  ASSERT_GT(cap.libc_base, cap.bias) << "libc above the program, as the finder below assumes";
  auto libc = tprof::BuildUnwindTable(std::string(cap.libc_path));
  ASSERT_TRUE(libc) << libc.error().message();
  ASSERT_TRUE(std::any_of(libc->rows.begin(), libc->rows.end(), [](const tprof_unwind_row& r) {
    return r.cfa_base == TPROF_UNWIND_CFA_SIGNAL;
  })) << "no signal trampoline row in " << cap.libc_path;

  struct Env {
    const ChainCapture* cap;
    const tprof::UnwindTable *program, *libc;
  } env{&cap, &*program, &*libc};
  tprof_unwind_walker w{};
  w.regs = {cap.pc, cap.sp, cap.fp, cap.lr};
  w.find = [](void* ctx, u64 pc) -> const tprof_unwind_row* {
    auto* e = static_cast<Env*>(ctx);
    const bool in_libc = pc >= e->cap->libc_base;
    const tprof::UnwindTable* t = in_libc ? e->libc : e->program;
    const u64 bias = in_libc ? e->cap->libc_base : e->cap->bias;
    if (pc < bias) return nullptr;
    return tprof_unwind_table_find(t->rows.data(), static_cast<u32>(t->rows.size()), pc - bias);
  };
  w.read = [](void* ctx, u64 addr, u64* val) {
    const ChainCapture* c = static_cast<Env*>(ctx)->cap;
    if (addr < c->sp || addr + 8 > c->sp + c->stack_len) return -EFAULT;
    std::memcpy(val, c->stack + (addr - c->sp), 8);
    return 0;
  };
  w.ctx = &env;
  u64 out[32];
  w.out = out;
  w.max = 32;
  w.max_reads = 128;
  tprof_unwind_stop stop{};
  const unsigned int n = tprof_unwind_walk(&w, &stop);
  const u64* end = out + n;
  const u64* at = std::find(static_cast<const u64*>(out), end, u64{cap.interrupted_pc});
  ASSERT_NE(at, end) << "the walk (" << n << " frames, stop " << int(stop)
                     << ") did not reach the interrupted pc";
  // Then raise's frames in libc, and uw_c's callers in order.
  for (int i = 1; i < 4; i++) {
    at = std::find(at, end, u64{cap.ra[i]});
    EXPECT_NE(at, end) << "caller " << i << " after the signal frame";
  }
}
#endif

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

// The module's page index over a real table finds what a search of the
// whole table finds, at every row's edges, in about 4 rows a page.
TEST(UnwindTable, ThePageIndexFindsWhatTheSearchFinds) {
  auto table = tprof::BuildUnwindTable("/lib/x86_64-linux-gnu/libc.so.6");
  ASSERT_TRUE(table) << table.error().message();
  const auto& rows = table->rows;
  const u32 n = static_cast<u32>(rows.size());
  u32 shift = 0;
  tprof_unwind_index ix{};
  ix.nr = tprof_unwind_index_size(rows.data(), n, &shift);
  ix.shift = shift;
  EXPECT_LE(ix.nr, n / TPROF_UNWIND_INDEX_ROWS + 1);
  EXPECT_GT(ix.nr * 8, n / TPROF_UNWIND_INDEX_ROWS) << "pages of " << (1u << shift) << " bytes";
  std::vector<u32> first(ix.nr);
  ix.first = first.data();
  tprof_unwind_index_fill(rows.data(), n, &ix);
  size_t differ = 0;
  for (const tprof_unwind_row& r : rows)
    for (u64 a : {u64(r.start) - 1, u64(r.start), u64(r.start) + 1})
      if (tprof_unwind_index_find(rows.data(), n, &ix, a) != tprof_unwind_table_find(rows.data(), n, a))
        differ++;
  EXPECT_EQ(differ, 0u);
}

// The vDSO has no file: its table comes from this process's own copy. At
// a function's entry the CFA is the stack pointer + 8 (x86-64: the return
// address the call pushed).
TEST(UnwindTable, TheVdsoHasATableFromThisProcesssImage) {
  auto table = tprof::BuildVdsoUnwindTable();
  ASSERT_TRUE(table) << table.error().message();
  EXPECT_GE(table->functions, 3u) << "clock_gettime, gettimeofday, time, getcpu...";
  ASSERT_FALSE(table->segments.empty());
  const auto& rows = table->rows;
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(tprof_unwind_table_check(rows.data(), static_cast<u32>(rows.size())), 0);
  EXPECT_TRUE(std::any_of(rows.begin(), rows.end(), [](const tprof_unwind_row& r) {
    return r.cfa_base == TPROF_UNWIND_CFA_SP && r.cfa_offset == 8;
  })) << "no function entry's rule";
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

// arm64 code without CFI whose rules are known: PLT stubs ("the caller is
// lr", sp and fp untouched) and crti/crtn's _init/_fini (a 16-byte frame
// record after their second instruction), where a frame-pointer step
// skipped the caller. Debian's arm64 libc and libgcc_s, from the
// cross-compiler's packages that make deps installs.
u64 SectionAddress(const std::string& file, const std::string& section) {
  FILE* p = ::popen(("readelf -SW " + file + " | sed -n 's/.* \\" + section +
                     "  *PROGBITS  *\\([0-9a-f]*\\) .*/\\1/p'").c_str(), "r");
  if (!p) return 0;
  char line[64] = {};
  const bool got = std::fgets(line, sizeof(line), p) != nullptr;
  ::pclose(p);
  return got ? std::strtoull(line, nullptr, 16) : 0;
}

TEST(UnwindTable, Arm64CodeWithoutCfiGetsItsKnownRules) {
  auto row_at = [](const tprof::UnwindTable& t, u64 at) {
    return tprof_unwind_table_find(t.rows.data(), static_cast<u32>(t.rows.size()), at);
  };
  const std::string libc = "/usr/aarch64-linux-gnu/lib/libc.so.6";
  auto table = tprof::BuildUnwindTable(libc);
  ASSERT_TRUE(table) << table.error().message();
  EXPECT_EQ(tprof_unwind_table_check(table->rows.data(), static_cast<u32>(table->rows.size())), 0);
  const u64 plt = SectionAddress(libc, ".plt");
  ASSERT_GT(plt, 0u) << "no .plt in " << libc;
  const tprof_unwind_row* r = row_at(*table, plt + 0x40);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->cfa_base, TPROF_UNWIND_CFA_SP);
  EXPECT_EQ(r->cfa_offset, 0);
  EXPECT_EQ(r->ra_rule, TPROF_UNWIND_RA_IN_LR);
  EXPECT_EQ(r->fp_rule, TPROF_UNWIND_FP_SAME);

  const std::string gcc_s = "/usr/aarch64-linux-gnu/lib/libgcc_s.so.1";
  auto g = tprof::BuildUnwindTable(gcc_s);
  ASSERT_TRUE(g) << g.error().message();
  EXPECT_EQ(tprof_unwind_table_check(g->rows.data(), static_cast<u32>(g->rows.size())), 0);
  const u64 fini = SectionAddress(gcc_s, ".fini");
  ASSERT_GT(fini, 0u) << "no .fini in " << gcc_s;
  r = row_at(*g, fini);  // nop: nothing pushed yet
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->ra_rule, TPROF_UNWIND_RA_IN_LR);
  EXPECT_EQ(r->cfa_offset, 0);
  r = row_at(*g, fini + 8);  // after stp x29, x30, [sp, #-16]!
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->cfa_base, TPROF_UNWIND_CFA_SP);
  EXPECT_EQ(r->cfa_offset, 16);
  EXPECT_EQ(r->ra_rule, TPROF_UNWIND_RA_AT_CFA);
  EXPECT_EQ(r->ra_offset, -8);
  EXPECT_EQ(r->fp_rule, TPROF_UNWIND_FP_AT_CFA);
  EXPECT_EQ(r->fp_offset, -16);
  r = row_at(*g, fini + 16);  // ret, after ldp x29, x30, [sp], #16
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->ra_rule, TPROF_UNWIND_RA_IN_LR);
  EXPECT_EQ(r->cfa_offset, 0);
}

// The table BuildVdsoUnwindTable() gives an image (a fixture under
// build/tests/symfiles/unwind/, from tests/unit/symfiles/arm64_vdso.S).
tprof::Expected<tprof::UnwindTable> VdsoTable(const std::string& name) {
  const std::string path = "build/tests/symfiles/unwind/" + name;
  elf_version(EV_CURRENT);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tprof::Error::FromErrno(errno, path);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  auto t = elf && !tprof::BuildUnwindTable(elf) ? tprof::BuildVdsoUnwindTable(elf)
                                               : tprof::Error::FromErrno(EINVAL, path + ": has CFI");
  if (elf) elf_end(elf);
  ::close(fd);
  return t;
}

// arm64's vDSO has no CFI: its leaf functions take the caller from lr, and
// its signal trampoline, recognised by its two instructions, gets a SIGNAL
// row that covers the nop before it too.
TEST(UnwindTable, Arm64VdsoGetsLeafRowsAndASignalRowForItsTrampoline) {
  auto t = VdsoTable("arm64-vdso.so");
  ASSERT_TRUE(t) << t.error().message() << " (make unit-tests builds it)";
  const auto& rows = t->rows;
  EXPECT_EQ(tprof_unwind_table_check(rows.data(), static_cast<u32>(rows.size())), 0);
  const u64 tramp = 0x234;  // __kernel_rt_sigreturn in the fixture
  auto row_at = [&](u64 at) {
    return tprof_unwind_table_find(rows.data(), static_cast<u32>(rows.size()), at);
  };
  for (u64 at : {tramp - 4, tramp, tramp + 4}) {
    const tprof_unwind_row* r = row_at(at);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->cfa_base, TPROF_UNWIND_CFA_SIGNAL) << std::hex << at;
    EXPECT_EQ(r->cfa_offset, 560) << "sigcontext.sp in struct rt_sigframe";
    EXPECT_EQ(r->ra_offset, 8) << "pc after sp";
    EXPECT_EQ(r->fp_offset, -16) << "x29 two words before sp";
    EXPECT_EQ(r->ra_rule, TPROF_UNWIND_RA_IN_LR);
  }
  const tprof_unwind_row* leaf = row_at(0x220);  // __kernel_clock_gettime
  ASSERT_NE(leaf, nullptr);
  EXPECT_EQ(leaf->cfa_base, TPROF_UNWIND_CFA_SP);
  EXPECT_EQ(leaf->cfa_offset, 0);
  EXPECT_EQ(leaf->ra_rule, TPROF_UNWIND_RA_IN_LR) << "a leaf: the caller is lr";
  EXPECT_EQ(leaf->fp_rule, TPROF_UNWIND_FP_SAME);
  ASSERT_NE(row_at(tramp + 8), nullptr);
  EXPECT_EQ(row_at(tramp + 8)->cfa_base, TPROF_UNWIND_CFA_NONE) << "past the code";
  ASSERT_FALSE(t->segments.empty());

  // A function that pushes a frame record: no rule for the code (the walk
  // stops there), but the trampoline's.
  auto framed = VdsoTable("arm64-vdso-framed.so");
  ASSERT_TRUE(framed) << framed.error().message();
  const auto& f = framed->rows;
  const tprof_unwind_row* r = tprof_unwind_table_find(f.data(), static_cast<u32>(f.size()), 0x220);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->cfa_base, TPROF_UNWIND_CFA_UNSTATED);
  r = tprof_unwind_table_find(f.data(), static_cast<u32>(f.size()), tramp);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->cfa_base, TPROF_UNWIND_CFA_SIGNAL);
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

// Appends a record (header first) of `body` bytes padded to 8.
void AppendRecord(std::vector<uint8_t>* buf, uint32_t type, const void* body, size_t bytes) {
  const size_t start = buf->size();
  buf->resize(start + ((bytes + 7) & ~size_t{7}));
  std::memcpy(buf->data() + start, body, bytes);
  tprof_rec_header h{type, static_cast<uint32_t>(buf->size() - start)};
  std::memcpy(buf->data() + start, &h, sizeof(h));
}

// A user-mode sample of the chain's capture, as the kernel writes one with
// TPROF_SAMPLING_USER_STACK: the frame-pointer walk's frames (`fp_frames`),
// then the registers and the stack copy.
std::vector<uint8_t> ChainSample(const ChainCapture& cap, const std::vector<uint64_t>& fp_frames,
                                 uint64_t space = tprof::test::kSymSpace) {
  std::vector<uint8_t> body(sizeof(tprof_rec_sample));
  tprof_rec_sample s{};
  s.pid = s.tid = tprof::test::kSymPid;
  s.space_id = space;
  s.ip = cap.pc;
  s.flags = TPROF_SAMPLE_USER | TPROF_SAMPLE_STACK | TPROF_SAMPLE_USER_STACK;
  std::memcpy(body.data(), &s, sizeof(s));
  tprof_rec_stack st{0, static_cast<uint16_t>(fp_frames.size()), 0};
  auto append = [&body](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    body.insert(body.end(), b, b + n);
  };
  append(&st, sizeof(st));
  append(fp_frames.data(), fp_frames.size() * sizeof(uint64_t));
  tprof_rec_user_stack us{};
  us.pc = cap.pc;
  us.sp = cap.sp;
  us.fp = cap.fp;
  us.lr = cap.lr;
  us.asked = static_cast<uint32_t>((cap.stack_len + 7) & ~uint64_t{7});
  us.bytes = static_cast<uint32_t>(cap.stack_len & ~uint64_t{7});
  append(&us, sizeof(us));
  append(cap.stack, cap.stack_len);
  body.resize(body.size() + (us.asked - cap.stack_len));
  std::vector<uint8_t> rec;
  AppendRecord(&rec, TPROF_REC_SAMPLE, body.data(), body.size());
  return rec;
}

// The MAP records of the chain's executable file mappings (from its
// /proc/self/maps) whose path does (`program`) or does not contain the
// chain's own.
std::vector<uint8_t> ChainMaps(const std::string& maps_text, bool program) {
  std::vector<uint8_t> out;
  std::istringstream in(maps_text);
  std::string line;
  while (std::getline(in, line)) {
    unsigned long long start, end, pgoff;
    char perms[8] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &pgoff,
                    &path_at) < 4 || perms[2] != 'x' || !path_at)
      continue;
    const std::string path = line.substr(size_t(path_at));
    if (path.empty() || path[0] != '/' ||
        (path.find("unwind/chain") != std::string::npos) != program)
      continue;
    std::vector<uint8_t> body(sizeof(tprof_rec_map) + path.size() + 1);
    tprof_rec_map r{};
    r.pid = tprof::test::kSymPid;
    r.space_id = tprof::test::kSymSpace;
    r.start = start;
    r.end = end;
    r.pgoff = pgoff;
    std::memcpy(body.data(), &r, sizeof(r));
    std::memcpy(body.data() + sizeof(r), path.c_str(), path.size() + 1);
    AppendRecord(&out, TPROF_REC_MAP, body.data(), body.size());
  }
  return out;
}

// The profile builder walks a sample's stack copy with its space's
// mappings, which the kernel reports after the space's first sample and
// after each change, often in a buffer read later: a sample waits while
// none are known, or while its walk reaches code no mapping covers yet
// (libc, before its MAP records), until newer ones come; at the end, a
// space whose mappings never came keeps only the leaf: the kernel's
// frame-pointer frames may be data read through frameless code.
TEST(UnwindTable, ProfileBuilderWalksSampleStackCopies) {
  static ChainCapture cap;
  std::string maps_text;
  ASSERT_TRUE(RunChain(&cap, &maps_text));
  tprof::ProfileBuilder b;
  auto add = [&b](const std::vector<uint8_t>& recs) {
    ASSERT_FALSE(recs.empty());
    ASSERT_EQ(b.AddRecords(recs.data(), recs.size()), recs.size());
  };
  add(ChainSample(cap, {0xdead}));
  add(ChainSample(cap, {0xbeef}, tprof::test::kSymSpace + 1));
  EXPECT_EQ(b.profile().records.samples, 0u) << "both wait for their mappings";
  add(ChainMaps(maps_text, true));
  add(ChainSample(cap, {0xdead}));
  EXPECT_EQ(b.profile().records.samples, 0u) << "main's caller is in libc, not mapped yet";
  add(ChainMaps(maps_text, false));
  add(ChainSample(cap, {0xdead}));
  EXPECT_EQ(b.profile().records.samples, 3u) << "with libc, the three walked whole";
  tprof::Profile p = b.Finish();
  EXPECT_EQ(p.records.samples, 4u);
  ASSERT_EQ(p.stacks.size(), 2u);
  const std::vector<uint64_t>& user = p.stacks[0].user;
  ASSERT_GE(user.size(), 4u);
  EXPECT_EQ(std::vector<uint64_t>(user.begin(), user.begin() + 4),
            std::vector<uint64_t>(cap.ra, cap.ra + 4));
  EXPECT_TRUE(p.stacks[0].flags & tprof::kStackUserByCfi);
  EXPECT_TRUE(p.stacks[0].flags & tprof::kStackUserWhole) << "up to _start";
  EXPECT_TRUE(p.stacks[1].user.empty()) << "never mapped: the leaf (the sample's ip) alone";
  EXPECT_FALSE(p.stacks[1].flags & tprof::kStackUserByCfi);
  EXPECT_TRUE(p.stacks[1].flags & tprof::kStackUserLeafOnly);
  uint64_t walked = 0;
  for (const auto& [key, n] : p.stack_samples)
    if (key.stack == 1) walked += n;
  EXPECT_EQ(walked, 3u);
}

// The recorder's own copies (its pid, or a space that maps its program:
// its child before exec) are walked with the tables built already and
// never build one: its libraries' tables would cost it its drain time.
TEST(UnwindTable, TheRecordersOwnCopiesBuildNoTables) {
  static ChainCapture cap;
  std::string maps_text;
  ASSERT_TRUE(RunChain(&cap, &maps_text));
  for (bool by_pid : {true, false}) {
    SCOPED_TRACE(by_pid ? "the recorder's pid" : "a space mapping its program");
    auto tables = std::make_shared<tprof::UnwindTableCache>();
    tprof::ProfileBuilder b;
    b.ShareUnwindTables(tables);
    // The chain's program stands for the recorder's.
    const std::string program = std::filesystem::absolute(kChain).string();
    b.SetRecorder(by_pid ? tprof::test::kSymPid : 1, by_pid ? "/nonexistent" : program);
    for (const auto& recs : {ChainMaps(maps_text, true), ChainMaps(maps_text, false),
                             ChainSample(cap, {0xdead})})
      ASSERT_EQ(b.AddRecords(recs.data(), recs.size()), recs.size());
    tprof::Profile p = b.Finish();
    EXPECT_EQ(tables->built(), 0u);
    EXPECT_TRUE(tables->TakeNewlyBuilt().empty());
    ASSERT_EQ(p.records.samples, 1u);
  }
  // Anyone else's copy builds what its walk needs.
  auto tables = std::make_shared<tprof::UnwindTableCache>();
  tprof::ProfileBuilder b;
  b.ShareUnwindTables(tables);
  b.SetRecorder(1, "/nonexistent");
  for (const auto& recs : {ChainMaps(maps_text, true), ChainMaps(maps_text, false),
                           ChainSample(cap, {0xdead})})
    ASSERT_EQ(b.AddRecords(recs.data(), recs.size()), recs.size());
  EXPECT_GE(tables->built(), 2u) << "the program and libc";
}

}  // namespace
