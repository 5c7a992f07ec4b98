// The store of unwind tables between recordings
// (tprof/analysis/unwind_table_store.h) and the cache that reads it: a
// table built once is read back whole by the next cache, never by another
// builder, never from a damaged or foreign file, and the directory stays
// within its bound, oldest use first.
#include "tprof/analysis/unwind_table_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "tprof/analysis/elf_snapshot.h"
#include "tprof/analysis/unwind_table_cache.h"

namespace {

namespace fs = std::filesystem;

// A program built with a build id (tests/unit/symfiles/unwind_chain.c);
// the cache takes absolute paths, as MAP records name files.
const std::string kFile = fs::absolute("build/tests/symfiles/unwind/chain");

class UnwindTableStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/tprof-store-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    root_ = dir;
    dir_ = root_ + "/unwind-tables";
    id_ = tprof::FileBuildId(kFile);
    ASSERT_FALSE(id_.empty()) << kFile << " has no build id";
  }
  void TearDown() override { fs::remove_all(root_); }

  size_t Files() const {
    size_t n = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_, ec)) n += e.is_regular_file();
    return n;
  }
  fs::path OnlyFile() const {
    for (const auto& e : fs::directory_iterator(dir_)) return e.path();
    return {};
  }

  std::string root_, dir_, id_;
};

bool SameRows(const tprof::UnwindTable& a, const tprof::UnwindTable& b) {
  return a.rows.size() == b.rows.size() &&
         std::memcmp(a.rows.data(), b.rows.data(), a.rows.size() * sizeof(a.rows[0])) == 0 &&
         a.segments.size() == b.segments.size() && a.functions == b.functions &&
         a.unsupported == b.unsupported;
}

TEST_F(UnwindTableStoreTest, TheNextRecordingReadsWhatTheFirstBuilt) {
  tprof::UnwindTableCache first(tprof::UnwindTableStore(dir_, "b1"));
  const tprof::UnwindTable* built = first.Get(kFile);
  ASSERT_NE(built, nullptr);
  EXPECT_EQ(first.built(), 1u);
  EXPECT_EQ(first.stored(), 0u);
  ASSERT_EQ(Files(), 1u);
  struct stat st;
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u) << "tables say which programs a user ran";

  tprof::UnwindTableCache second(tprof::UnwindTableStore(dir_, "b1"));
  const tprof::UnwindTable* read = second.Get(kFile);
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(second.built(), 0u);
  EXPECT_EQ(second.stored(), 1u);
  EXPECT_TRUE(SameRows(*built, *read));
  for (size_t i = 0; i < read->segments.size(); i++) {
    EXPECT_EQ(read->segments[i].offset, built->segments[i].offset);
    EXPECT_EQ(read->segments[i].vaddr, built->segments[i].vaddr);
    EXPECT_EQ(read->segments[i].filesz, built->segments[i].filesz);
  }
  EXPECT_EQ(second.TakeNewlyBuilt(), std::vector<std::string>{kFile})
      << "a table read from the store is new to the recording all the same";
}

// A space's mappings are matched against the store as they arrive: what
// an earlier recording stored is read, nothing is built.
TEST_F(UnwindTableStoreTest, MappedFilesAreReadFromTheStoreNeverBuilt) {
  tprof::UnwindTableCache first(tprof::UnwindTableStore(dir_, "b1"));
  EXPECT_EQ(first.FindOrReadStored(kFile), nullptr) << "nothing stored yet";
  EXPECT_EQ(first.built(), 0u);
  ASSERT_NE(first.Get(kFile), nullptr);
  tprof::UnwindTableCache second(tprof::UnwindTableStore(dir_, "b1"));
  EXPECT_NE(second.FindOrReadStored(kFile), nullptr);
  EXPECT_EQ(second.stored(), 1u);
  EXPECT_EQ(second.FindOrReadStored("/bin/sh"), nullptr) << "not stored: not built either";
  EXPECT_EQ(second.built(), 0u);
  EXPECT_EQ(second.Find("/bin/sh"), nullptr);
}

TEST_F(UnwindTableStoreTest, AnotherBuilderBuildsItsOwn) {
  tprof::UnwindTableCache first(tprof::UnwindTableStore(dir_, "b1"));
  ASSERT_NE(first.Get(kFile), nullptr);
  tprof::UnwindTableCache changed(tprof::UnwindTableStore(dir_, "b2"));
  ASSERT_NE(changed.Get(kFile), nullptr);
  EXPECT_EQ(changed.built(), 1u);
  EXPECT_EQ(Files(), 2u);
}

TEST_F(UnwindTableStoreTest, DamagedFilesAreBuiltAgain) {
  const tprof::UnwindTableStore store(dir_, "b1");
  tprof::UnwindTableCache first{tprof::UnwindTableStore(store)};
  const tprof::UnwindTable* built = first.Get(kFile);
  ASSERT_NE(built, nullptr);
  const fs::path file = OnlyFile();
  const auto size = fs::file_size(file);
  // Cut short (a full disk), then a row too many, then a wrong magic.
  fs::resize_file(file, size - 1);
  EXPECT_FALSE(store.Read(id_));
  fs::resize_file(file, size + sizeof(tprof_unwind_row));
  EXPECT_FALSE(store.Read(id_));
  fs::resize_file(file, size);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.write("XXXX", 4);
  }
  EXPECT_FALSE(store.Read(id_));
  tprof::UnwindTableCache again{tprof::UnwindTableStore(store)};
  const tprof::UnwindTable* rebuilt = again.Get(kFile);
  ASSERT_NE(rebuilt, nullptr);
  EXPECT_EQ(again.built(), 1u);
  EXPECT_TRUE(SameRows(*built, *rebuilt));
  EXPECT_TRUE(store.Read(id_)) << "the build wrote it again";
  // Names that are not build ids never reach the file system.
  EXPECT_FALSE(store.Read("../" + id_));
  EXPECT_FALSE(store.Read(""));
}

TEST_F(UnwindTableStoreTest, ASymlinkIsNotFollowed) {
  const tprof::UnwindTableStore store(dir_, "b1");
  tprof::UnwindTableCache first{tprof::UnwindTableStore(store)};
  ASSERT_NE(first.Get(kFile), nullptr);
  const fs::path file = OnlyFile();
  const fs::path moved = root_ + "/elsewhere";
  fs::rename(file, moved);
  fs::create_symlink(moved, file);
  EXPECT_FALSE(store.Read(id_));
}

TEST_F(UnwindTableStoreTest, TheDirectoryKeepsTheMostRecentlyUsedWithinItsBound) {
  auto table = tprof::BuildUnwindTable(kFile);
  ASSERT_TRUE(table) << table.error().message();
  const tprof::UnwindTableStore unbounded(dir_, "b1");
  unbounded.Write("aa", *table);
  const uint64_t one = fs::file_size(OnlyFile());
  // Room for two files: a third prunes down to three quarters of the
  // bound, which two still fit.
  const tprof::UnwindTableStore store(dir_, "b1", 2 * one + one / 4 * 3);
  store.Write("bb", *table);
  ASSERT_EQ(Files(), 2u);
  // "aa" read last: "bb" is the least recently used.
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const auto& e : fs::directory_iterator(dir_)) fs::last_write_time(e.path(), old);
  ASSERT_TRUE(store.Read("aa"));
  store.Write("cc", *table);
  EXPECT_TRUE(store.Read("aa"));
  EXPECT_FALSE(store.Read("bb"));
  EXPECT_TRUE(store.Read("cc"));
}

TEST(UnwindTableStore, ItsPlaceFollowsTheXdgRules) {
  ASSERT_FALSE(tprof::UnwindTableBuilderId().empty()) << "the tests are linked with a build id";
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string saved_xdg = xdg ? xdg : "", saved_home = home ? home : "";
  ::setenv("XDG_CACHE_HOME", "/x/cache", 1);
  auto s = tprof::UnwindTableStore::ForUser();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->dir(), "/x/cache/tprof/unwind-tables");
  ::setenv("XDG_CACHE_HOME", "relative", 1);
  ::setenv("HOME", "/h", 1);
  s = tprof::UnwindTableStore::ForUser();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->dir(), "/h/.cache/tprof/unwind-tables");
  ::unsetenv("XDG_CACHE_HOME");
  ::unsetenv("HOME");
  EXPECT_FALSE(tprof::UnwindTableStore::ForUser()) << "no home: nothing is kept";
  if (xdg) ::setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
  if (home) ::setenv("HOME", saved_home.c_str(), 1);
}

}  // namespace
