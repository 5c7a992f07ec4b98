// tprof archive: a recording packed with its files is reported after the
// originals are gone (build/tests/symfiles: see elf_fixtures.h).
#include "tprof/analysis/archive.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tprof/analysis/annotate.h"
#include "tprof/analysis/diff.h"
#include "tprof/analysis/elf_snapshot.h"
#include "tprof/analysis/profile.h"
#include "tprof/analysis/profile_file.h"
#include "tprof/analysis/symbolizer.h"
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

  // The stripped library (its debug file in .debug/, by .gnu_debuglink) in
  // dir_/lib with `samples` at st_hidden+2, archived into dir_/name; the
  // archived profile as read back. The library stays in place.
  Profile ArchivedProfile(const std::string& name, uint64_t samples) {
    const std::string lib = (dir_ / "lib/libsymtest.so").string();
    if (!fs::exists(lib)) {
      fs::copy_file(SymFiles() + "/link/libsymtest.so", lib);
      fs::copy_file(SymFiles() + "/link/.debug/libsymtest.so.debug",
                    dir_ / "lib/.debug/libsymtest.so.debug");
    }
    Profile p = LibraryProfile(lib);
    p.samples[{kSymPid, kSymSpace, kSymBase + hidden_ + 2, TPROF_SAMPLE_USER}] = samples;
    const std::string out = (dir_ / name).string();
    auto summary = tprof::ArchiveProfile(p, out, "/nonexistent");
    EXPECT_TRUE(summary.ok() && summary.value().packed.size() == 1u &&
                summary.value().packed[0].debug_file)
        << "the library and its debug file are packed";
    auto archived = tprof::ReadProfile(out + "/" + tprof::kArchiveProfileName);
    EXPECT_TRUE(archived.ok());
    return archived.ok() ? archived.value() : Profile();
  }
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

TEST_F(Archive, AnnotateReadsTheArchivedFileAndItsDebugFile) {
  const Profile q = ArchivedProfile("archive", 5);
  fs::remove_all(dir_ / "lib");  // the originals are gone
  const std::string out = (dir_ / "archive").string();
  tprof::AnnotateOptions ao;
  ao.debug_dir = "/nonexistent";

  tprof::Symbolizer sym(q, {.source_lines = true, .debug_dir = "/nonexistent", .symfs = out});
  auto a = tprof::Annotate(q, sym, "st_hidden", ao);
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->object, (dir_ / "lib/libsymtest.so").string()) << "the recorded path";
  EXPECT_EQ(a->code_source.rfind(out + "/.build-id/", 0), 0u)
      << "the bytes come from the archive: " << a->code_source;
  EXPECT_GT(a->size, 2u) << "the extent from the archived debug file's .symtab: "
                         << a->disassembly_note;
  EXPECT_EQ(a->disassembly_note, "");
  EXPECT_EQ(a->source_note, "") << "lines from the archived debug file";
  uint64_t samples = 0;
  for (const tprof::AnnotatedInstruction& ins : a->instructions) {
    EXPECT_FALSE(ins.text.empty()) << "not disassembled at +" << ins.offset;
    if (ins.offset <= 2 && 2 < ins.offset + ins.size) samples += ins.samples;
  }
  EXPECT_EQ(samples, 5u) << "the samples on the instruction at +2";
  ASSERT_FALSE(a->files.empty());
  EXPECT_NE(a->files[0].path.find("symtest.c"), std::string::npos) << a->files[0].path;

  tprof::Symbolizer without(q, {.source_lines = true, .debug_dir = "/nonexistent"});
  EXPECT_FALSE(tprof::Annotate(q, without, "st_hidden", ao))
      << "without symfs the removed file names no st_hidden";
}

TEST_F(Archive, DiffNamesTheFunctionsOfEachSideFromItsOwnArchive) {
  const Profile qa = ArchivedProfile("a", 3);
  const Profile qb = ArchivedProfile("b", 7);
  fs::remove_all(dir_ / "lib");
  tprof::Symbolizer sym_a(qa, {.debug_dir = "/nonexistent", .symfs = (dir_ / "a").string()});
  tprof::Symbolizer sym_b(qb, {.debug_dir = "/nonexistent", .symfs = (dir_ / "b").string()});
  tprof::DiffData d = tprof::BuildDiff({qa, sym_a, "A"}, {qb, sym_b, "B"}, {});
  const tprof::DiffRow* hidden = nullptr;
  for (const tprof::DiffRow& row : d.rows)
    if (row.function == "st_hidden") hidden = &row;
  ASSERT_NE(hidden, nullptr) << "each archive names st_hidden";
  EXPECT_EQ(hidden->samples_a, 3u);
  EXPECT_EQ(hidden->samples_b, 7u);

  tprof::Symbolizer bare_a(qa, {.debug_dir = "/nonexistent"});
  tprof::Symbolizer bare_b(qb, {.debug_dir = "/nonexistent"});
  for (const tprof::DiffRow& row : tprof::BuildDiff({qa, bare_a, "A"}, {qb, bare_b, "B"}, {}).rows)
    EXPECT_NE(row.function, "st_hidden") << "without symfs the removed file names nothing";
}

}  // namespace
