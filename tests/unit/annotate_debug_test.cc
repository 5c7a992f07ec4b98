// Annotate on stripped files: the function's extent and source lines come
// from wherever the symbolizer found its symbols (a debug file through
// .gnu_debuglink, MiniDebugInfo), so that annotate shows what dump names.
// build/tests/symfiles: see elf_fixtures.h.
#include <gtest/gtest.h>

#include <string>

#include "tprof/analysis/annotate.h"
#include "tprof/analysis/profile.h"
#include "tprof/analysis/symbolizer.h"
#include "elf_fixtures.h"

namespace {

using tprof::AnnotatedInstruction;
using tprof::Profile;
using tprof::Symbolizer;
using tprof::test::kSymBase;
using tprof::test::kSymPid;
using tprof::test::kSymSpace;
using tprof::test::LibraryProfile;
using tprof::test::SymbolAddress;
using tprof::test::SymbolSize;
using tprof::test::SymFiles;

class AnnotateDebug : public ::testing::Test {
 protected:
  void SetUp() override {
    hidden_ = SymbolAddress("st_hidden");
    size_ = SymbolSize("st_hidden");
    ASSERT_NE(hidden_, 0u) << "no " << SymFiles() << "/full/libsymtest.so: make unit-tests";
    ASSERT_GT(size_, 2u);
    options_.debug_dir = "/nonexistent";
  }
  // The library at path with 5 samples at st_hidden+2.
  Profile Sampled(const std::string& path) const {
    Profile p = LibraryProfile(path);
    p.samples[{kSymPid, kSymSpace, kSymBase + hidden_ + 2, TPROF_SAMPLE_USER}] = 5;
    return p;
  }
  // The samples on the instruction that holds st_hidden+2.
  static uint64_t SamplesAtPlus2(const tprof::Annotation& a) {
    uint64_t samples = 0;
    for (const AnnotatedInstruction& ins : a.instructions)
      if (ins.offset <= 2 && 2 < ins.offset + ins.size) samples += ins.samples;
    return samples;
  }
  uint64_t hidden_ = 0, size_ = 0;
  tprof::AnnotateOptions options_;
};

TEST_F(AnnotateDebug, AStrippedFilesDebugFileIsFoundThroughGnuDebuglinkAsDumpFindsIt) {
  const Profile p = Sampled(SymFiles() + "/link/libsymtest.so");
  Symbolizer sym(p, {.source_lines = true, .debug_dir = "/nonexistent"});  // only the link
  auto a = tprof::Annotate(p, sym, "st_hidden", options_);
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->size, size_) << "the extent from the debug file's .symtab: "
                            << a->disassembly_note;
  EXPECT_EQ(a->disassembly_note, "");
  EXPECT_EQ(a->source_note, "") << "lines from the debug file";
  EXPECT_EQ(SamplesAtPlus2(*a), 5u);
  ASSERT_FALSE(a->files.empty());
  EXPECT_NE(a->files[0].path.find("symtest.c"), std::string::npos) << a->files[0].path;
  // The sampled instruction's line is the one the report gives.
  const tprof::Location& loc = sym.Resolve(kSymPid, kSymSpace, kSymBase + hidden_ + 2, true);
  ASSERT_GT(loc.line, 0u);
  bool found = false;
  for (const AnnotatedInstruction& ins : a->instructions) {
    if (ins.offset > 2 || 2 >= ins.offset + ins.size) continue;
    found = true;
    EXPECT_EQ(ins.line, loc.line);
    // (annotate makes a name relative to the compilation directory absolute)
    EXPECT_TRUE(ins.file.ends_with(loc.source_file)) << ins.file << " vs " << loc.source_file;
  }
  EXPECT_TRUE(found) << "no instruction holds st_hidden+2";
}

TEST_F(AnnotateDebug, AFunctionOnlyMiniDebugInfoNamesIsDisassembledOverItsSymbolsExtent) {
  const Profile p = Sampled(SymFiles() + "/mini/libsymtest.so");
  Symbolizer sym(p, {.source_lines = true, .debug_dir = "/nonexistent"});
  auto a = tprof::Annotate(p, sym, "st_hidden", options_);
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->size, size_) << a->disassembly_note;
  EXPECT_EQ(a->disassembly_note, "");
  EXPECT_EQ(a->code_source, SymFiles() + "/mini/libsymtest.so");
  EXPECT_EQ(SamplesAtPlus2(*a), 5u);
  for (const AnnotatedInstruction& ins : a->instructions)
    EXPECT_FALSE(ins.text.empty()) << "not disassembled at +" << ins.offset;
  EXPECT_NE(a->source_note, "") << "MiniDebugInfo has no lines: the note says so";
}

}  // namespace
