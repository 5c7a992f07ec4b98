// tprof archive: a recording packed with its files is reported after the
// originals are gone (build/tests/symfiles: see elf_fixtures.h).
#include "tprof/archive.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tprof/elf_snapshot.h"
#include "tprof/profile.h"
#include "tprof/profile_file.h"
#include "tprof/symbolizer.h"
#include "elf_fixtures.h"

namespace {

namespace fs = std::filesystem;
using tprof::Profile;

using tprof::test::kSymBase;
using tprof::test::kSymPid;
using tprof::test::kSymSpace;
using tprof::test::SymbolAddress;
using tprof::test::SymFiles;

// The library mapped as the fixture maps it, with its build id recorded.
Profile LibraryProfile(const std::string& path) {
  Profile p = tprof::test::LibraryProfile(path);
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
  const tprof::Location& loc = sym.Resolve(kSymPid, kSymSpace, kSymBase + hidden_ + 2, true);
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
  EXPECT_EQ(relative.Resolve(kSymPid, kSymSpace, kSymBase + hidden_ + 2, true).symbol, "st_hidden");
  fs::current_path(cwd);

  tprof::Symbolizer without(q, {.source_lines = true, .debug_dir = "/nonexistent"});
  EXPECT_FALSE(without.Resolve(kSymPid, kSymSpace, kSymBase + hidden_ + 2, true).resolved())
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
