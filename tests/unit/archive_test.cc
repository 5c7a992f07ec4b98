// tprof archive: a recording packed with its files is reported after the
// originals are gone (build/tests/symfiles: see symbolizer_debug_test.cc).
#include "tprof/archive.h"

#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <string>

#include "tprof/elf_snapshot.h"
#include "tprof/profile.h"
#include "tprof/profile_file.h"
#include "tprof/symbolizer.h"

namespace {

namespace fs = std::filesystem;
using tprof::Profile;

constexpr uint32_t kPid = 42;
constexpr uint64_t kSpace = 7;
constexpr uint64_t kBase = 0x7f0000000000;

std::string SymFiles() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  std::string exe(buf, n > 0 ? static_cast<size_t>(n) : 0);
  return exe.substr(0, exe.rfind('/')) + "/symfiles";
}

uint64_t SymbolAddress(const std::string& name) {
  elf_version(EV_CURRENT);
  int fd = ::open((SymFiles() + "/full/libsymtest.so").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  uint64_t address = 0;
  Elf_Scn* scn = nullptr;
  while (elf && (scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || sh.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; ++i) {
      GElf_Sym sym;
      const char* s = gelf_getsym(data, static_cast<int>(i), &sym)
                          ? elf_strptr(elf, sh.sh_link, sym.st_name)
                          : nullptr;
      if (s && name == s) address = sym.st_value;
    }
  }
  if (elf) elf_end(elf);
  ::close(fd);
  return address;
}

// The library at kBase, mapped per PT_LOAD, with its build id recorded.
Profile LibraryProfile(const std::string& path) {
  Profile p;
  elf_version(EV_CURRENT);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  Elf* elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, nullptr) : nullptr;
  size_t n = 0;
  if (elf && elf_getphdrnum(elf, &n) == 0) {
    for (size_t i = 0; i < n; ++i) {
      GElf_Phdr ph;
      if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
      p.mappings[{kPid, kSpace}].push_back({kBase + (ph.p_vaddr & ~0xfffull),
                                            kBase + ph.p_vaddr + ph.p_memsz,
                                            ph.p_offset & ~0xfffull, path});
    }
  }
  if (elf) elf_end(elf);
  if (fd >= 0) ::close(fd);
  p.build_ids[path] = tprof::FileBuildId(path);
  return p;
}

class Archive : public ::testing::Test {
 protected:
  void SetUp() override {
    hidden_ = SymbolAddress("st_hidden");
    ASSERT_NE(hidden_, 0u) << "no " << SymFiles() << "/full/libsymtest.so: make unit-tests";
    dir_ = fs::temp_directory_path() / ("tprof-archive-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "lib/.debug");
  }
  void TearDown() override { fs::remove_all(dir_); }
  uint64_t hidden_ = 0;
  fs::path dir_;
};

TEST_F(Archive, AReportReadsTheArchivedFileAndDebugFileAfterTheOriginalsAreGone) {
  // The stripped library, found by its .gnu_debuglink in .debug/.
  const std::string lib = (dir_ / "lib/libsymtest.so").string();
  fs::copy_file(SymFiles() + "/link/libsymtest.so", lib);
  fs::copy_file(SymFiles() + "/link/.debug/libsymtest.so.debug",
                dir_ / "lib/.debug/libsymtest.so.debug");
  Profile p = LibraryProfile(lib);
  ASSERT_FALSE(p.mappings.empty());
  ASSERT_EQ(p.build_ids[lib].size(), 40u);

  const std::string out = (dir_ / "archive").string();
  auto summary = tprof::ArchiveProfile(p, out, "/nonexistent");
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  ASSERT_EQ(summary.value().packed.size(), 1u);
  EXPECT_EQ(summary.value().packed[0].path, lib);
  EXPECT_TRUE(summary.value().packed[0].debug_file) << "the debuglink's debug file is packed";
  EXPECT_TRUE(summary.value().skipped.empty());
  EXPECT_TRUE(fs::exists(out + "/" + tprof::kArchiveProfileName));
  EXPECT_TRUE(fs::exists(out + "/manifest"));

  fs::remove_all(dir_ / "lib");  // the originals are gone
  auto archived = tprof::ReadProfile(out + "/" + tprof::kArchiveProfileName);
  ASSERT_TRUE(archived.ok()) << archived.error().message();
  const Profile& q = archived.value();

  tprof::SymbolizerOptions o;
  o.debug_dir = "/nonexistent";
  o.symfs = out;
  tprof::Symbolizer sym(q, o);
  const tprof::Location& loc = sym.Resolve(kPid, kSpace, kBase + hidden_ + 2, true);
  EXPECT_EQ(loc.object, lib) << "reported under the recorded path";
  EXPECT_EQ(loc.symbol, "st_hidden") << "a static function: only the archived debug file has it";
  EXPECT_EQ(loc.offset, 2u);
  EXPECT_NE(loc.source_file.find("symtest.c"), std::string::npos) << loc.source_file;
  EXPECT_GT(loc.line, 0u);

  // A relative symfs (as `tprofctl dump --symfs DIR` passes it) finds the
  // debug file too: libdwfl searches only absolute directories.
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_);
  o.symfs = "archive";
  tprof::Symbolizer relative(q, o);
  EXPECT_EQ(relative.Resolve(kPid, kSpace, kBase + hidden_ + 2, true).symbol, "st_hidden");
  fs::current_path(cwd);

  tprof::Symbolizer without(q, {.source_lines = true, .debug_dir = "/nonexistent"});
  EXPECT_FALSE(without.Resolve(kPid, kSpace, kBase + hidden_ + 2, true).resolved())
      << "without symfs the removed file cannot be read";
}

TEST_F(Archive, ARebuiltFileIsListedNotPacked) {
  const std::string lib = (dir_ / "lib/libsymtest.so").string();
  fs::copy_file(SymFiles() + "/full/libsymtest.so", lib);
  Profile p = LibraryProfile(lib);
  const std::string recorded = p.build_ids[lib];
  fs::copy_file(SymFiles() + "/rebuilt/libsymtest.so", lib, fs::copy_options::overwrite_existing);
  const std::string out = (dir_ / "archive").string();
  auto summary = tprof::ArchiveProfile(p, out, "/nonexistent");
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  EXPECT_TRUE(summary.value().packed.empty()) << "its bytes are not the recorded build's";
  ASSERT_EQ(summary.value().skipped.size(), 1u);
  EXPECT_EQ(summary.value().skipped[0].path, lib);
  EXPECT_EQ(summary.value().skipped[0].recorded_build_id, recorded);
  EXPECT_EQ(summary.value().skipped[0].current_build_id, tprof::FileBuildId(lib));
  EXPECT_FALSE(fs::exists(tprof::SymfsPath(out, recorded)));
}

}  // namespace
