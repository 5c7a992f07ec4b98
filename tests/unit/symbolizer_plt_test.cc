// PLT stubs are named "func@plt", as objdump labels them: the programs and
// libraries the Makefile builds under build/tests/symfiles/plt from
// tests/unit/symfiles/plttest.c, one per PLT layout, each with objdump's
// labels of its stubs beside it (FILE.names), the oracle here.
#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tprof/analysis/annotate.h"
#include "tprof/analysis/archive.h"
#include "tprof/analysis/elf_snapshot.h"
#include "tprof/analysis/profile.h"
#include "tprof/analysis/profile_file.h"
#include "tprof/output/report.h"
#include "tprof/analysis/symbolizer.h"
#include "tprof/analysis/unresolved.h"
#include "elf_fixtures.h"

namespace {

namespace fs = std::filesystem;
using tprof::Location;
using tprof::Profile;
using tprof::Symbolizer;
using tprof::SymbolizerOptions;
using tprof::test::kSymBase;
using tprof::test::kSymPid;
using tprof::test::kSymSpace;
using tprof::test::SymFiles;

std::string PltFiles() { return SymFiles() + "/plt"; }

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

struct Section {
  uint64_t address = 0;
  uint64_t size = 0;
};

// What the tests need of a fixture: its PLT sections, whether it is a
// non-PIE program (mapped at its link-time addresses) and has a .symtab,
// its machine, and objdump's labels in its PLT sections.
struct Fixture {
  std::string path;
  std::map<std::string, Section> sections;  // .plt, .plt.sec, .plt.got
  bool exec = false;
  bool symtab = false;
  bool arm64 = false;
  std::map<uint64_t, std::string> labels;
  uint64_t base() const { return exec ? 0 : kSymBase; }
  // The end of the label's stub at address: the next label or the end of
  // its section, whichever is first.
  uint64_t End(uint64_t address) const {
    uint64_t end = UINT64_MAX;
    for (const auto& [name, s] : sections)
      if (address >= s.address && address < s.address + s.size) end = s.address + s.size;
    auto next = labels.upper_bound(address);
    return next != labels.end() && next->first < end ? next->first : end;
  }
};

Fixture ReadFixture(const std::string& name) {
  Fixture f;
  f.path = PltFiles() + "/" + name;
  elf_version(EV_CURRENT);
  int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
  Elf* elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, nullptr) : nullptr;
  GElf_Ehdr eh;
  size_t shstrndx = 0;
  if (elf && gelf_getehdr(elf, &eh) && elf_getshdrstrndx(elf, &shstrndx) == 0) {
    f.exec = eh.e_type == ET_EXEC;
    f.arm64 = eh.e_machine == EM_AARCH64;
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr sh;
      if (!gelf_getshdr(scn, &sh)) continue;
      const std::string s = elf_strptr(elf, shstrndx, sh.sh_name);
      if (s == ".plt" || s == ".plt.sec" || s == ".plt.got")
        f.sections[s] = {sh.sh_addr, sh.sh_size};
      f.symtab |= sh.sh_type == SHT_SYMTAB;
    }
  }
  if (elf) elf_end(elf);
  if (fd >= 0) ::close(fd);
  std::ifstream in(f.path + ".names");
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string hex, label;
    if (words >> hex >> label) f.labels[std::stoull(hex, nullptr, 16)] = label;
  }
  return f;
}

// The program's own IFUNC: objdump labels its stub by the resolver's
// address ("*ABS*+0x11d0@plt"); with a .symtab the symbolizer names it by
// the IFUNC's symbol there, as perf does.
std::string WantedName(const Fixture& f, const std::string& label) {
  if (label.rfind("*ABS*+", 0) == 0 && f.symtab) return "pt_ifunc@plt";
  return label;
}

// objdump's label of the lazy binder's entry (PLT0): the section's name, or
// "<first entry>@plt-0x10" when an entry follows it directly.
bool IsHeaderLabel(const std::string& label) {
  return label == ".plt" || label.find("@plt-0x") != std::string::npos;
}

class SymbolizerPlt : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    f_ = ReadFixture(GetParam());
    if (GetParam().rfind("arm64-", 0) == 0 && !fs::exists(f_.path))
      GTEST_SKIP() << f_.path << " was not built: no aarch64-linux-gnu-gcc";
    ASSERT_TRUE(f_.sections.count(".plt")) << "no " << f_.path << ": make unit-tests";
    ASSERT_FALSE(f_.labels.empty()) << "objdump labelled nothing in " << f_.path << ".names";
    p_ = tprof::test::LibraryProfile(f_.path, f_.base());
  }
  const Location& At(Symbolizer& sym, uint64_t address) {
    return sym.Resolve(kSymPid, kSymSpace, f_.base() + address, true);
  }
  Fixture f_;
  Profile p_;
};

TEST_P(SymbolizerPlt, EveryStubHasTheNameObjdumpGivesIt) {
  Symbolizer sym(p_);
  bool puts = false, strlen = false, ifunc = false;
  for (const auto& [address, label] : f_.labels) {
    if (IsHeaderLabel(label)) continue;
    SCOPED_TRACE(label);
    const uint64_t end = f_.End(address);
    for (uint64_t at : {address, address + 1, end - 1}) {
      const Location& loc = At(sym, at);
      EXPECT_EQ(loc.symbol, WantedName(f_, label)) << "at 0x" << std::hex << at;
      EXPECT_EQ(loc.offset, at - address) << "from the stub's start";
      EXPECT_EQ(loc.symbol_size, end - address) << "the stub's size";
    }
    puts |= label == "puts@plt";
    strlen |= label == "strlen@plt";
    ifunc |= label.rfind("*ABS*+", 0) == 0 || label == "pt_ifunc@plt";
  }
  EXPECT_TRUE(puts && strlen) << "the fixture calls libc's puts and strlen through the PLT";
  EXPECT_TRUE(ifunc) << "the fixture calls its IFUNC through the PLT";
}

TEST_P(SymbolizerPlt, TheLazyBindersEntryIsDotPltNotAFunctionsStub) {
  Symbolizer sym(p_);
  const Section& plt = f_.sections.at(".plt");
  ASSERT_TRUE(f_.labels.count(plt.address) && IsHeaderLabel(f_.labels.at(plt.address)))
      << "ld writes a header (PLT0) first: objdump labels " << f_.labels.begin()->second;
  const uint64_t header = f_.arm64 ? 32 : 16;
  for (uint64_t at : {plt.address, plt.address + header / 2, plt.address + header - 1}) {
    const Location& loc = At(sym, at);
    EXPECT_EQ(loc.symbol, ".plt") << "at 0x" << std::hex << at << ": perf's name for it";
    EXPECT_EQ(loc.offset, at - plt.address);
  }
}

TEST_P(SymbolizerPlt, NoAddressPastAPltSectionsLastStubTakesAStubsName) {
  Symbolizer sym(p_);
  for (const auto& [name, s] : f_.sections) {
    const uint64_t past = s.address + s.size;
    const Location& loc = At(sym, past);
    SCOPED_TRACE(name + " ends at 0x" + (std::ostringstream() << std::hex << past).str());
    auto label = f_.labels.find(past);
    if (label != f_.labels.end() && !IsHeaderLabel(label->second)) {
      EXPECT_EQ(loc.symbol, WantedName(f_, label->second)) << "the next PLT section's stub";
    } else {
      EXPECT_FALSE(EndsWith(loc.symbol, "@plt")) << loc.symbol;
      EXPECT_NE(loc.symbol, ".plt");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, SymbolizerPlt,
                         ::testing::Values("x86-pie", "x86-nopie", "x86-now", "x86-ibt",
                                           "x86-ibt-now", "x86-lib.so", "x86-pie-stripped",
                                           "arm64-pie", "arm64-lib.so"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string s = param.param;
                           for (char& c : s)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

// IBT's .plt (beside .plt.sec) holds the lazy halves of the stubs
// (endbr64; push index; jmp PLT0), which objdump leaves in <.plt>: entry k
// is the stub of the function whose .plt.sec entry k is.
TEST(SymbolizerPltIbt, LazyEntriesAreNamedAsTheirPltSecEntries) {
  for (const char* name : {"x86-ibt", "x86-ibt-now"}) {
    SCOPED_TRACE(name);
    const Fixture f = ReadFixture(name);
    ASSERT_TRUE(f.sections.count(".plt") && f.sections.count(".plt.sec"))
        << f.path << ": -fcf-protection -z ibtplt makes a .plt.sec (make unit-tests)";
    Profile p = tprof::test::LibraryProfile(f.path, f.base());
    Symbolizer sym(p);
    const Section& plt = f.sections.at(".plt");
    const Section& sec = f.sections.at(".plt.sec");
    ASSERT_EQ(plt.size, sec.size + 16) << "a 16-byte header and one lazy entry per .plt.sec entry";
    auto at = [&](uint64_t address) -> const Location& {
      return sym.Resolve(kSymPid, kSymSpace, f.base() + address, true);
    };
    for (uint64_t k = 0; k < sec.size / 16; ++k) {
      const Location& lazy = at(plt.address + 16 + 16 * k + 5);
      const Location& entry = at(sec.address + 16 * k);
      EXPECT_TRUE(EndsWith(entry.symbol, "@plt")) << entry.symbol;
      EXPECT_EQ(lazy.symbol, entry.symbol) << "entry " << k;
      EXPECT_EQ(lazy.offset, 5u);
    }
  }
}

// The stub's address of objdump's label, 0 if none.
uint64_t StubAddress(const Fixture& f, const std::string& label) {
  for (const auto& [address, l] : f.labels)
    if (l == label) return address;
  return 0;
}

TEST(SymbolizerPltReports, AStubIsAFunctionRowAndNoUnnamedAddress) {
  const Fixture f = ReadFixture("x86-pie");
  const uint64_t puts = StubAddress(f, "puts@plt");
  ASSERT_NE(puts, 0u) << "no " << f.path << ".names: make unit-tests";
  Profile p = tprof::test::LibraryProfile(f.path);
  p.samples[{kSymPid, kSymSpace, kSymBase + puts + 4, TPROF_SAMPLE_USER}] = 5;
  Symbolizer sym(p);
  tprof::ReportData d = tprof::BuildReport(p, sym, {});
  ASSERT_EQ(d.functions.size(), 1u);
  ASSERT_EQ(d.functions[0].functions.size(), 1u);
  EXPECT_EQ(d.functions[0].functions[0].function, "puts@plt");
  EXPECT_TRUE(d.functions[0].functions[0].location.resolved());
  EXPECT_EQ(d.unresolved_samples, 0u);
  EXPECT_TRUE(tprof::UnresolvedObjects(p, sym, "/nonexistent").empty())
      << "no `have no function name` hint for a stub";
  EXPECT_NE(tprof::FoldedStacks(p, sym, {}).find("puts@plt 5"), std::string::npos)
      << "the flame graph's frames are named alike";
}

TEST(SymbolizerPltReports, AnnotateDisassemblesTheStub) {
  const Fixture f = ReadFixture("x86-pie");
  const uint64_t puts = StubAddress(f, "puts@plt");
  ASSERT_NE(puts, 0u) << "no " << f.path << ".names: make unit-tests";
  Profile p = tprof::test::LibraryProfile(f.path);
  p.samples[{kSymPid, kSymSpace, kSymBase + puts, TPROF_SAMPLE_USER}] = 3;
  Symbolizer sym(p);
  auto a = tprof::Annotate(p, sym, "puts@plt", {});
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a.value().function, "puts@plt");
  EXPECT_EQ(a.value().size, 16u);
  ASSERT_FALSE(a.value().instructions.empty()) << a.value().disassembly_note;
  EXPECT_EQ(a.value().instructions[0].address, kSymBase + puts);
  EXPECT_EQ(a.value().instructions[0].samples, 3u);
  EXPECT_NE(a.value().instructions[0].text.find("jmp"), std::string::npos)
      << "a lazy stub jumps through its GOT slot: " << a.value().instructions[0].text;
}

TEST(SymbolizerPltReports, AnArchiveNamesTheStubsOfARemovedFile) {
  const Fixture f = ReadFixture("x86-lib.so");
  const uint64_t puts = StubAddress(f, "puts@plt");
  ASSERT_NE(puts, 0u) << "no " << f.path << ".names: make unit-tests";
  const fs::path dir =
      fs::temp_directory_path() / ("tprof-plt-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "lib");
  const std::string lib = (dir / "lib/libplt.so").string();
  fs::copy_file(f.path, lib);
  Profile p = tprof::test::LibraryProfile(lib);
  p.build_ids[lib] = tprof::FileBuildId(lib);
  p.samples[{kSymPid, kSymSpace, kSymBase + puts, TPROF_SAMPLE_USER}] = 1;
  const std::string out = (dir / "archive").string();
  auto summary = tprof::ArchiveProfile(p, out, "/nonexistent");
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  ASSERT_EQ(summary.value().packed.size(), 1u);
  fs::remove_all(dir / "lib");
  auto archived = tprof::ReadProfile(out + "/" + tprof::kArchiveProfileName);
  ASSERT_TRUE(archived.ok()) << archived.error().message();

  SymbolizerOptions o;
  o.debug_dir = "/nonexistent";
  o.symfs = out;
  Symbolizer sym(archived.value(), o);
  EXPECT_EQ(sym.Resolve(kSymPid, kSymSpace, kSymBase + puts, true).symbol, "puts@plt");
  Symbolizer without(archived.value(), {.source_lines = true, .debug_dir = "/nonexistent"});
  EXPECT_FALSE(without.Resolve(kSymPid, kSymSpace, kSymBase + puts, true).resolved())
      << "the file is gone: only the archive has its PLT";
  fs::remove_all(dir);
}

}  // namespace
