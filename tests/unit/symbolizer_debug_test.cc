// The symbolizer with separate debug files: build/tests/symfiles (see
// elf_fixtures.h) holds libsymtest.so with DWARF, stripped copies found
// through .gnu_debuglink or a build-id tree, and one with no debug file to
// be found.
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tprof/analysis/elf_snapshot.h"
#include "tprof/analysis/profile.h"
#include "tprof/output/report.h"
#include "tprof/analysis/symbolizer.h"
#include "tprof/analysis/unresolved.h"
#include "elf_fixtures.h"

namespace {

using tprof::Location;
using tprof::Mapping;
using tprof::Profile;
using tprof::SpaceKind;
using tprof::Symbolizer;
using tprof::SymbolizerOptions;

using tprof::test::ElfSymbol;
using tprof::test::LibraryProfile;
using tprof::test::SymbolAddress;
using tprof::test::SymFiles;
constexpr uint32_t kPid = tprof::test::kSymPid;
constexpr uint64_t kSpace = tprof::test::kSymSpace;
constexpr uint64_t kBase = tprof::test::kSymBase;

class SymbolizerDebug : public ::testing::Test {
 protected:
  void SetUp() override {
    hidden_ = SymbolAddress("st_hidden");
    exported_ = SymbolAddress("st_exported");
    ASSERT_NE(hidden_, 0u) << "no " << SymFiles() << "/full/libsymtest.so: make unit-tests";
    ASSERT_NE(exported_, 0u);
  }
  uint64_t hidden_ = 0, exported_ = 0;
};

TEST_F(SymbolizerDebug, AStrippedFileFindsItsDebugFileThroughGnuDebuglink) {
  Profile p = LibraryProfile(SymFiles() + "/link/libsymtest.so");
  ASSERT_FALSE(p.mappings.empty());
  SymbolizerOptions o;
  o.debug_dir = "/nonexistent";  // only the link can find it
  Symbolizer sym(p, o);
  const Location& loc = sym.Resolve(kPid, kSpace, kBase + hidden_ + 2, true);
  EXPECT_EQ(loc.kind, SpaceKind::kMainExecutable) << "the only file: the main executable";
  EXPECT_EQ(loc.symbol, "st_hidden") << "a static function: only the debug file's .symtab has it";
  EXPECT_EQ(loc.offset, 2u);
  EXPECT_NE(loc.source_file.find("symtest.c"), std::string::npos) << loc.source_file;
  EXPECT_GT(loc.line, 0u);
}

TEST_F(SymbolizerDebug, AStrippedFileFindsItsDebugFileByBuildIdUnderDebugDir) {
  Profile p = LibraryProfile(SymFiles() + "/bare/libsymtest.so");
  SymbolizerOptions o;
  o.debug_dir = SymFiles() + "/debug";
  Symbolizer sym(p, o);
  const Location& loc = sym.Resolve(kPid, kSpace, kBase + hidden_, true);
  EXPECT_EQ(loc.symbol, "st_hidden");
  EXPECT_NE(loc.source_file.find("symtest.c"), std::string::npos) << loc.source_file;
  EXPECT_GT(loc.line, 0u);
}

// Whether the ELF file at path has a section of that name.
bool HasSection(const std::string& path, const std::string& name) {
  elf_version(EV_CURRENT);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  Elf* elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, nullptr) : nullptr;
  size_t shstrndx = 0;
  bool found = false;
  Elf_Scn* scn = nullptr;
  while (elf && elf_getshdrstrndx(elf, &shstrndx) == 0 && !found &&
         (scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    const char* s = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : nullptr;
    found = s && name == s;
  }
  if (elf) elf_end(elf);
  if (fd >= 0) ::close(fd);
  return found;
}

// Fedora's MiniDebugInfo: the stripped file carries its .symtab as an
// xz-compressed ELF in .gnu_debugdata, which libdwfl (built with lzma, as
// Debian's is) reads when no debug file is found.
TEST_F(SymbolizerDebug, AStrippedFileWithMiniDebugInfoNamesItsStaticFunctions) {
  const std::string mini = SymFiles() + "/mini/libsymtest.so";
  ASSERT_TRUE(HasSection(mini, ".gnu_debugdata")) << mini << ": make unit-tests";
  ASSERT_FALSE(HasSection(mini, ".symtab")) << "stripped: only MiniDebugInfo has st_hidden";
  ASSERT_FALSE(HasSection(mini, ".gnu_debuglink"));
  Profile p = LibraryProfile(mini);
  SymbolizerOptions o;
  o.debug_dir = "/nonexistent";
  Symbolizer sym(p, o);
  const Location& loc = sym.Resolve(kPid, kSpace, kBase + hidden_ + 3, true);
  EXPECT_EQ(loc.symbol, "st_hidden") << loc.FunctionName();
  EXPECT_EQ(loc.offset, 3u);
  EXPECT_TRUE(loc.source_file.empty()) << "MiniDebugInfo has symbols, no lines";
  EXPECT_EQ(sym.Resolve(kPid, kSpace, kBase + exported_, true).symbol, "st_exported");
  auto fa = sym.FileAddressOf(kPid, kSpace, kBase + hidden_);
  ASSERT_TRUE(fa);
  EXPECT_EQ(fa->debug_file, "") << "no separate debug file";
}

TEST_F(SymbolizerDebug, FileAddressGivesTheDebugFileTheSymbolizerFound) {
  SymbolizerOptions o;
  o.debug_dir = "/nonexistent";
  Profile linked = LibraryProfile(SymFiles() + "/link/libsymtest.so");
  Symbolizer by_link(linked, o);
  auto fa = by_link.FileAddressOf(kPid, kSpace, kBase + hidden_);
  ASSERT_TRUE(fa);
  EXPECT_EQ(fa->address, hidden_);
  EXPECT_EQ(std::filesystem::canonical(fa->debug_file),
            std::filesystem::canonical(SymFiles() + "/link/.debug/libsymtest.so.debug"))
      << "found through .gnu_debuglink";

  o.debug_dir = SymFiles() + "/debug";
  Profile bare = LibraryProfile(SymFiles() + "/bare/libsymtest.so");
  Symbolizer by_id(bare, o);
  fa = by_id.FileAddressOf(kPid, kSpace, kBase + hidden_);
  ASSERT_TRUE(fa);
  const std::string id = tprof::FileBuildId(SymFiles() + "/bare/libsymtest.so");
  EXPECT_EQ(std::filesystem::canonical(fa->debug_file),
            std::filesystem::canonical(SymFiles() + "/debug/.build-id/" + id.substr(0, 2) + "/" +
                                       id.substr(2) + ".debug"))
      << "found by build id";

  Profile full = LibraryProfile(SymFiles() + "/full/libsymtest.so");
  Symbolizer own(full, o);
  fa = own.FileAddressOf(kPid, kSpace, kBase + hidden_);
  ASSERT_TRUE(fa);
  EXPECT_EQ(fa->debug_file, "") << "the file has its own symbols and DWARF";
}

TEST_F(SymbolizerDebug, WithoutADebugFileUnnamedAddressesAreFilePlusOffsetEach) {
  Profile p = LibraryProfile(SymFiles() + "/bare/libsymtest.so");
  SymbolizerOptions o;
  o.debug_dir = "/nonexistent";
  Symbolizer sym(p, o);
  EXPECT_EQ(sym.Resolve(kPid, kSpace, kBase + exported_, true).symbol, "st_exported")
      << ".dynsym still names exported functions";
  const Location& a = sym.Resolve(kPid, kSpace, kBase + hidden_, true);
  const Location& b = sym.Resolve(kPid, kSpace, kBase + hidden_ + 4, true);
  EXPECT_FALSE(a.resolved());
  char want[64];
  std::snprintf(want, sizeof(want), "libsymtest.so+0x%llx", static_cast<unsigned long long>(hidden_));
  EXPECT_EQ(a.FunctionName(), want) << "the file and the object-relative address";
  std::snprintf(want, sizeof(want), "libsymtest.so+0x%llx",
                static_cast<unsigned long long>(hidden_ + 4));
  EXPECT_EQ(b.FunctionName(), want) << "one name per address, not one per file";
  EXPECT_TRUE(a.source_file.empty());

  p.samples[{kPid, kSpace, kBase + hidden_, TPROF_SAMPLE_USER}] = 3;
  p.samples[{kPid, kSpace, kBase + hidden_ + 4, TPROF_SAMPLE_USER}] = 2;
  p.samples[{kPid, kSpace, kBase + exported_, TPROF_SAMPLE_USER}] = 7;
  auto objects = tprof::UnresolvedObjects(p, sym, "/nonexistent");
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_EQ(objects[0].path, SymFiles() + "/bare/libsymtest.so");
  EXPECT_EQ(objects[0].samples, 5u) << "only the unnamed addresses' samples";
  EXPECT_EQ(objects[0].package, "");
  // `dump --pid P` hints only at the files of the process it shows.
  EXPECT_EQ(tprof::UnresolvedObjects(p, sym, kPid, "/nonexistent").size(), 1u);
  EXPECT_TRUE(tprof::UnresolvedObjects(p, sym, kPid + 1, "/nonexistent").empty())
      << "another pid has no samples there";
}

// The link-time address of a .dynsym function of an ELF image in memory.
uint64_t ImageSymbol(const std::string& image, const std::string& name) {
  elf_version(EV_CURRENT);
  Elf* elf = elf_memory(const_cast<char*>(image.data()), image.size());
  const uint64_t address = ElfSymbol(elf, SHT_DYNSYM, name);
  if (elf) elf_end(elf);
  return address;
}

TEST(SymbolizerVdso, NamesVdsoAddressesFromTheImageTheProfileCarries) {
  const uint64_t base = getauxval(AT_SYSINFO_EHDR);
  if (base == 0) GTEST_SKIP() << "no vDSO";
  Profile p;
  p.vdso_image = tprof::VdsoImage();
  ASSERT_GT(p.vdso_image.size(), 1000u);
  EXPECT_EQ(p.vdso_image.compare(0, 4, "\x7f" "ELF"), 0);
  const uint64_t fn = ImageSymbol(p.vdso_image, "__vdso_clock_gettime");
  ASSERT_NE(fn, 0u) << "x86-64's vDSO exports __vdso_clock_gettime";
  p.mappings[{kPid, kSpace}] = {{base, base + 0x2000, 0, "[vdso]"}};
  Symbolizer sym(p);
  const Location& loc = sym.Resolve(kPid, kSpace, base + fn + 3, true);
  EXPECT_EQ(loc.kind, SpaceKind::kSharedLibrary);
  EXPECT_EQ(loc.object, "[vdso]");
  EXPECT_NE(loc.symbol.find("clock_gettime"), std::string::npos) << loc.FunctionName();
  EXPECT_EQ(loc.offset, 3u);

  Profile without = p;
  without.vdso_image.clear();
  Symbolizer bare(without);
  char want[64];
  std::snprintf(want, sizeof(want), "[vdso]+0x%llx", static_cast<unsigned long long>(fn + 3));
  EXPECT_EQ(bare.Resolve(kPid, kSpace, base + fn + 3, true).FunctionName(), want)
      << "without the image: the address in the vDSO";
}

TEST(SymbolizerVdso, SnapshotStoresTheVdsoAndBuildIdsOfSampledSpacesOnly) {
  Profile p = LibraryProfile(SymFiles() + "/full/libsymtest.so");
  p.mappings[{kPid, kSpace}].push_back({0x10000, 0x12000, 0, "[vdso]"});
  p.mappings[{kPid + 1, kSpace + 1}] = {{0x1000, 0x2000, 0, SymFiles() + "/link/libsymtest.so"}};
  p.samples[{kPid, kSpace, kBase + 0x1000, TPROF_SAMPLE_USER}] = 1;
  tprof::SnapshotOptions o;
  o.kallsyms_path = "/nonexistent";
  tprof::SnapshotSystemState(&p, o);
  EXPECT_EQ(p.build_ids.size(), 1u) << "only spaces with user samples";
  const std::string id = p.build_ids[SymFiles() + "/full/libsymtest.so"];
  EXPECT_EQ(id.size(), 40u) << id;
  EXPECT_EQ(id, tprof::FileBuildId(SymFiles() + "/link/libsymtest.so"))
      << "stripping keeps the build id";
  if (getauxval(AT_SYSINFO_EHDR) != 0) {
    EXPECT_EQ(p.vdso_image, tprof::VdsoImage());
  }
}

TEST_F(SymbolizerDebug, ARebuiltFileIsDetectedAndNamedFromTheRecordedBuildsDebugFile) {
  const std::string rebuilt = SymFiles() + "/rebuilt/libsymtest.so";
  const std::string original_id = tprof::FileBuildId(SymFiles() + "/full/libsymtest.so");
  ASSERT_EQ(original_id.size(), 40u);
  ASSERT_NE(tprof::FileBuildId(rebuilt), original_id) << "the Makefile's rebuilt copy";
  Profile p = LibraryProfile(rebuilt);
  p.build_ids[rebuilt] = original_id;  // recorded before the rebuild
  p.build_ids[SymFiles() + "/bare/libsymtest.so"] = original_id;  // unchanged
  auto files = tprof::RebuiltFiles(p);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].path, rebuilt);
  EXPECT_EQ(files[0].recorded_build_id, original_id);
  EXPECT_EQ(files[0].current_build_id, tprof::FileBuildId(rebuilt));

  SymbolizerOptions o;
  o.debug_dir = SymFiles() + "/debug";
  Symbolizer sym(p, o);
  const Location& loc = sym.Resolve(kPid, kSpace, kBase + hidden_, true);
  EXPECT_EQ(loc.symbol, "st_hidden") << "the recorded build's debug file names the address";
  EXPECT_NE(loc.source_file.find("symtest.c"), std::string::npos) << loc.source_file;

  Profile unrecorded = LibraryProfile(rebuilt);
  Symbolizer on_disk(unrecorded, o);
  EXPECT_NE(on_disk.Resolve(kPid, kSpace, kBase + hidden_, true).symbol, "st_hidden")
      << "the rebuilt file itself has other code there (else this test proves nothing)";
}

// The number of the first line of a source file that contains text, 0 if
// none does (or the file cannot be read).
uint32_t LineOf(const std::string& path, const std::string& text) {
  std::ifstream in(path);
  uint32_t n = 0;
  for (std::string line; std::getline(in, line);)
    if (++n, line.find(text) != std::string::npos) return n;
  return 0;
}

TEST_F(SymbolizerDebug, InlinedFunctionsAreNamedInnermostFirstAndFoldedAsFrames) {
  Profile p = LibraryProfile(SymFiles() + "/full/libsymtest.so");
  Symbolizer sym(p);
  // st_inlined is always_inline in st_exported: some of st_exported's
  // instructions are DWARF's inlined st_inlined.
  uint64_t at = 0;
  for (uint64_t a = exported_; a < exported_ + 64 && at == 0; ++a) {
    const Location& loc = sym.Resolve(kPid, kSpace, kBase + a, true);
    if (loc.symbol == "st_exported" && !loc.inlined.empty()) at = a;
  }
  ASSERT_NE(at, 0u) << "no address of st_exported carries the inlined st_inlined";
  const Location& loc = sym.Resolve(kPid, kSpace, kBase + at, true);
  EXPECT_EQ(loc.inlined, std::vector<std::string>{"st_inlined"});
  // The call site: st_exported's line, which calls st_inlined.
  ASSERT_EQ(loc.inlined_calls.size(), 1u);
  const uint32_t call_line = LineOf(loc.inlined_calls[0].file, "int st_exported(");
  ASSERT_GT(call_line, 0u) << "the call's file, symtest.c: " << loc.inlined_calls[0].file;
  EXPECT_EQ(loc.inlined_calls[0].line, call_line);
  EXPECT_NE(loc.inlined_calls[0].line, loc.line) << "not the sampled line inside st_inlined";
  EXPECT_EQ(loc.FrameNames(), (std::vector<std::string>{"st_inlined (inlined)", "st_exported"}));
  EXPECT_TRUE(sym.Resolve(kPid, kSpace, kBase + hidden_, true).inlined.empty());

  p.samples[{kPid, kSpace, kBase + at, TPROF_SAMPLE_USER}] = 3;
  std::string folded = tprof::FoldedStacks(p, sym, {});
  EXPECT_NE(folded.find(";st_exported;st_inlined (inlined) 3\n"), std::string::npos) << folded;
  tprof::ReportOptions o;
  o.children = true;
  tprof::ReportData d = tprof::BuildReport(p, sym, o);
  ASSERT_EQ(d.functions.size(), 1u);
  bool step = false;
  for (const tprof::CallerRow& c : d.functions[0].callers)
    step |= c.caller == "st_exported" && c.callee == "st_inlined (inlined)" && c.samples == 3;
  EXPECT_TRUE(step) << "--by caller: st_exported -> st_inlined (inlined)";
}

TEST(DpkgPackages, FindsTheListThatHasThePathOrItsMergedUsrTwin) {
  std::string dir = ::testing::TempDir() + "tprof-dpkg-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/libc6:amd64.list") << "/.\n/lib\n/lib/x86_64-linux-gnu/libc.so.6\n";
  std::ofstream(dir + "/zlib1g:amd64.list") << "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13\n";
  std::ofstream(dir + "/libc6:amd64.md5sums") << "/usr/bin/prog\n";
  auto packages = tprof::DpkgPackages({"/usr/lib/x86_64-linux-gnu/libc.so.6",
                                       "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13", "/usr/bin/prog"},
                                      dir);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(packages.size(), 3u);
  EXPECT_EQ(packages[0], "libc6") << "/usr/lib is /lib's merged twin; no :arch";
  EXPECT_EQ(packages[1], "zlib1g");
  EXPECT_EQ(packages[2], "") << "only .list files count";
}

}  // namespace
