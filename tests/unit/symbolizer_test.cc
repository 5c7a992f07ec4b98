// The symbolizer against a real ELF file (this test binary and the libc it
// runs with, mapped as /proc/self/maps says) and against synthetic kallsyms,
// perf maps and mappings.
#include "tprof/analysis/symbolizer.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <string>

#include "tprof/analysis/profile.h"
#include "elf_fixtures.h"

// Markers to look up: not inlined, not static (so in .symtab with a size).
// The body makes it longer than the offsets looked up (an empty one is a
// 1-byte `ret`).
volatile int tprof_test_sink;
extern "C" __attribute__((noinline)) void tprof_test_marker_fn() {
  for (int i = 0; i < 4; ++i) tprof_test_sink = tprof_test_sink + i;
}
namespace tprof_test {
__attribute__((noinline)) int CppMarker(int x) {
  asm volatile("" : "+r"(x));
  return x + 1;
}
}  // namespace tprof_test

namespace {

using tprof::Location;
using tprof::Mapping;
using tprof::Profile;
using tprof::SpaceKind;
using tprof::Symbolizer;

constexpr uint64_t kSpace = 77;

uint64_t Addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

Profile SelfProfile() { return tprof::test::SelfProfile(static_cast<uint32_t>(getpid()), kSpace); }

TEST(Symbolizer, NamesAFunctionOfTheMainExecutableWithItsSourceLine) {
  Profile p = SelfProfile();
  ASSERT_FALSE(p.mappings.empty()) << "no executable mappings in /proc/self/maps";
  Symbolizer sym(p);
  const uint32_t pid = getpid();
  EXPECT_EQ(sym.MainExecutable(pid, kSpace), SelfExe());
  const uint64_t fn = Addr(reinterpret_cast<void*>(&tprof_test_marker_fn));
  const Location& loc = sym.Resolve(pid, kSpace, fn + 1, true);
  EXPECT_EQ(loc.kind, SpaceKind::kMainExecutable) << loc.object;
  EXPECT_EQ(loc.object, SelfExe());
  EXPECT_EQ(loc.symbol, "tprof_test_marker_fn");
  EXPECT_EQ(loc.offset, 1u);
  EXPECT_EQ(loc.SpaceName(), "main");
  // The unit tests are built with -g: DWARF says where the function is.
  EXPECT_NE(loc.source_file.find("symbolizer_test.cc"), std::string::npos) << loc.source_file;
  EXPECT_GT(loc.line, 0u);
}

TEST(Symbolizer, DemanglesCppNames) {
  Profile p = SelfProfile();
  Symbolizer sym(p);
  const Location& loc =
      sym.Resolve(getpid(), kSpace, Addr(reinterpret_cast<void*>(&tprof_test::CppMarker)), true);
  EXPECT_EQ(loc.symbol, "tprof_test::CppMarker(int)");
}

TEST(Symbolizer, NamesALibcFunctionInASharedLibrary) {
  Profile p = SelfProfile();
  Symbolizer sym(p);
  void* getpid_addr = ::dlsym(RTLD_DEFAULT, "getpid");
  ASSERT_NE(getpid_addr, nullptr);
  const Location& loc = sym.Resolve(getpid(), kSpace, Addr(getpid_addr), true);
  EXPECT_EQ(loc.kind, SpaceKind::kSharedLibrary) << loc.object;
  EXPECT_NE(loc.object.find("libc"), std::string::npos) << loc.object;
  EXPECT_NE(loc.symbol.find("getpid"), std::string::npos) << loc.symbol;
  EXPECT_EQ(loc.offset, 0u);
  EXPECT_EQ(loc.SpaceName(), "shared:" + loc.object);
  EXPECT_EQ(sym.stats().elf_failures, 0u);
}

TEST(Symbolizer, CachesResults) {
  Profile p = SelfProfile();
  Symbolizer sym(p);
  const uint64_t fn = Addr(reinterpret_cast<void*>(&tprof_test_marker_fn));
  const Location* first = &sym.Resolve(getpid(), kSpace, fn, true);
  EXPECT_EQ(first, &sym.Resolve(getpid(), kSpace, fn, true));
  EXPECT_EQ(sym.stats().addresses, 1u);
  EXPECT_EQ(sym.stats().elf_files, 1u);
}

// top's symbolizer lives across refreshes of one profile object: an
// address looked up before its mapping arrived is looked up again after
// ForgetAddresses(), and the ELF file opened once stays open.
TEST(Symbolizer, ForgetAddressesLooksUpAgainInTheChangedProfile) {
  Profile full = SelfProfile();
  Profile p;
  Symbolizer sym(p);
  const uint64_t fn = Addr(reinterpret_cast<void*>(&tprof_test_marker_fn));
  EXPECT_TRUE(sym.Resolve(getpid(), kSpace, fn, true).symbol.empty()) << "no mapping yet";
  p = full;
  EXPECT_TRUE(sym.Resolve(getpid(), kSpace, fn, true).symbol.empty()) << "cached until forgotten";
  sym.ForgetAddresses();
  EXPECT_EQ(sym.Resolve(getpid(), kSpace, fn, true).symbol, "tprof_test_marker_fn");
  const uint64_t opened = sym.stats().elf_files;
  sym.ForgetAddresses();
  EXPECT_EQ(sym.Resolve(getpid(), kSpace, fn, true).symbol, "tprof_test_marker_fn");
  EXPECT_EQ(sym.stats().elf_files, opened) << "the file was opened again";
}

TEST(Symbolizer, FindsTheSpaceThroughAnotherPidOfTheSameSpace) {
  Profile p = SelfProfile();
  Symbolizer sym(p);
  const Location& loc =
      sym.Resolve(999999, kSpace, Addr(reinterpret_cast<void*>(&tprof_test_marker_fn)), true);
  EXPECT_EQ(loc.symbol, "tprof_test_marker_fn");
}

TEST(Symbolizer, MainExecutableIsTheLowestFileThatIsNotASharedObject) {
  Profile p;
  p.mappings[{1, 1}] = {{0x1000, 0x2000, 0, "/opt/lib/libfoo.so.1"},
                        {0x5000, 0x6000, 0, "/usr/bin/prog"},
                        {0x7000, 0x8000, 0, "/usr/bin/other-prog"},
                        {0x9000, 0xa000, 0, "/lib64/ld-linux-x86-64.so.2"}};
  p.mappings[{1, 2}] = {{0x100, 0x200, 0, "[vdso]"},
                        {0x1000, 0x2000, 0, "/lib/x86_64-linux-gnu/libc.so.6"},
                        {0x3000, 0x4000, 0, "/lib64/ld-linux-x86-64.so.2"}};
  p.mappings[{1, 3}] = {{0x1000, 0x2000, 0, "/usr/bin/python3.11"}};
  Symbolizer sym(p);
  EXPECT_EQ(sym.MainExecutable(1, 1), "/usr/bin/prog");
  EXPECT_EQ(sym.MainExecutable(1, 2), "/lib/x86_64-linux-gnu/libc.so.6")
      << "only shared objects: the lowest file";
  EXPECT_EQ(sym.MainExecutable(1, 3), "/usr/bin/python3.11") << "'.so' must end a name part";
  EXPECT_EQ(sym.MainExecutable(1, 4), "");
}

TEST(Symbolizer, UnreadableFilesAndPseudoFilesKeepTheirSpace) {
  Profile p;
  p.mappings[{1, 1}] = {{0x1000, 0x2000, 0x3000, "/nonexistent/prog"},
                        {0x5000, 0x6000, 0, "/nonexistent/libz.so.1"},
                        {0x7000, 0x8000, 0, "[vdso]"}};
  Symbolizer sym(p);
  const Location& main = sym.Resolve(1, 1, 0x1010, true);
  EXPECT_EQ(main.kind, SpaceKind::kMainExecutable);
  EXPECT_FALSE(main.resolved());
  EXPECT_EQ(main.offset, 0x3010u) << "the file offset when the file cannot be read";
  EXPECT_EQ(main.FunctionName(), "prog+0x3010") << "the file name and the address in it";
  EXPECT_EQ(sym.Resolve(1, 1, 0x5000, true).kind, SpaceKind::kSharedLibrary);
  const Location& vdso = sym.Resolve(1, 1, 0x7008, true);
  EXPECT_EQ(vdso.kind, SpaceKind::kSharedLibrary);
  EXPECT_EQ(vdso.object, "[vdso]");
  EXPECT_EQ(vdso.SpaceName(), "shared:[vdso]");
  EXPECT_EQ(vdso.FunctionName(), "[vdso]+0x8");
  EXPECT_EQ(sym.stats().elf_failures, 2u) << "each missing file is tried once";
  EXPECT_EQ(sym.stats().unresolved, 3u);
}

TEST(Symbolizer, UnmappedUserAddressesAreUnresolvedOrJit) {
  Profile p;
  p.mappings[{1, 1}] = {{0x1000, 0x2000, 0, "/nonexistent/prog"}};
  p.jit_symbols[1] = {{0x9000, 0x100, "JIT:hot loop"}, {0x9100, 0x10, "JIT:stub"}};
  Symbolizer sym(p);
  const Location& jit = sym.Resolve(1, 1, 0x9050, true);
  EXPECT_EQ(jit.kind, SpaceKind::kJit);
  EXPECT_EQ(jit.symbol, "JIT:hot loop");
  EXPECT_EQ(jit.offset, 0x50u);
  EXPECT_EQ(sym.Resolve(1, 1, 0x9108, true).symbol, "JIT:stub");
  const Location& gap = sym.Resolve(1, 1, 0x9110, true);  // just past the stub
  EXPECT_EQ(gap.kind, SpaceKind::kUnresolved);
  EXPECT_EQ(gap.FunctionName(), "[unknown] 0x9110");
  EXPECT_EQ(gap.SpaceName(), "unresolved");
  EXPECT_EQ(sym.Resolve(2, 5, 0x9050, true).kind, SpaceKind::kUnresolved)
      << "another pid's JIT map does not apply";
}

Profile KernelProfile() {
  Profile p;
  p.kernel_symbols.available = true;
  p.kernel_symbols.symbols = {{0xffffffff81000000, 'T', "_stext", ""},
                              {0xffffffff81000100, 't', "do_syscall_64", ""},
                              {0xffffffff81000200, 'T', "schedule", ""},
                              {0xffffffffc0001000, 't', "ext4_read", "ext4"},
                              {0xffffffffc0001080, 't', "ext4_write", "ext4"}};
  return p;
}

TEST(Symbolizer, ResolvesKernelAndModuleAddressesFromTheKallsymsSnapshot) {
  Profile p = KernelProfile();
  Symbolizer sym(p);
  const Location& k = sym.Resolve(5, 0, 0xffffffff81000142, false);
  EXPECT_EQ(k.kind, SpaceKind::kKernel);
  EXPECT_EQ(k.symbol, "do_syscall_64");
  EXPECT_EQ(k.offset, 0x42u);
  EXPECT_EQ(k.SpaceName(), "kernel");
  const Location& m = sym.Resolve(5, 0, 0xffffffffc0001090, false);
  EXPECT_EQ(m.kind, SpaceKind::kModule);
  EXPECT_EQ(m.symbol, "ext4_write");
  EXPECT_EQ(m.SpaceName(), "module:ext4");
  EXPECT_EQ(sym.Resolve(5, 0, 0xffffffff81000200, false).symbol, "schedule");
  const Location& below = sym.Resolve(5, 0, 0xffffffff80000000, false);
  EXPECT_FALSE(below.resolved());
  EXPECT_EQ(below.kind, SpaceKind::kKernel);
  EXPECT_EQ(below.FunctionName(), "[unknown] [kernel]");
  EXPECT_FALSE(sym.Resolve(5, 0, 0, false).resolved()) << "a hidden kernel address";
}

TEST(Symbolizer, KernelAddressesStayUnresolvedWithoutKallsyms) {
  Profile p = KernelProfile();
  p.kernel_symbols.available = false;
  Symbolizer sym(p);
  const Location& k = sym.Resolve(5, 0, 0xffffffff81000142, false);
  EXPECT_EQ(k.kind, SpaceKind::kKernel);
  EXPECT_FALSE(k.resolved());
  EXPECT_EQ(sym.stats().unresolved, 1u);
}

TEST(Symbolizer, MappingAtGivesTheFileMappingWithItsBuildIdOrTheKernels) {
  Profile p = SelfProfile();
  const uint32_t pid = getpid();
  Symbolizer sym(p);
  const uint64_t fn = Addr(reinterpret_cast<void*>(&tprof_test_marker_fn));
  auto m = sym.MappingAt(pid, kSpace, fn, true);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->file, SelfExe());
  EXPECT_LE(m->start, fn);
  EXPECT_GT(m->limit, fn);
  // Debian's gcc links with --build-id (SHA-1: 20 bytes, 40 hex digits).
  EXPECT_EQ(m->build_id.size(), 40u) << m->build_id;
  EXPECT_FALSE(sym.MappingAt(pid, kSpace, 0x1000, true)) << "no mapping there";
  Profile k = KernelProfile();
  Symbolizer ksym(k);
  auto kernel = ksym.MappingAt(5, 0, 0xffffffff81000142, false);
  ASSERT_TRUE(kernel);
  EXPECT_EQ(kernel->file, tprof::kKernelMappingName);
  EXPECT_EQ(kernel->start, k.kernel_symbols.symbols.front().address);
  EXPECT_EQ(kernel->limit, UINT64_MAX);
  EXPECT_EQ(ksym.MappingAt(5, 0, 0xffffffffc0001000, false), kernel) << "modules too";
}

}  // namespace
