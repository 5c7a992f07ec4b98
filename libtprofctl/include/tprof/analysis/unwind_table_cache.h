// The unwind tables of the files a recording's stacks walk through, built
// from each file's CFI at its first use (or read from the store an earlier
// recording wrote, unwind_table_store.h) and kept for the recording. The
// copy walker (StackUnwinder) builds them; the recorder's loader hands the
// module only the ones built, so a file's CFI is read once, and only if a
// sample's stack went through it (under -a, most mapped files never are).
#ifndef TPROF_UNWIND_TABLE_CACHE_H_
#define TPROF_UNWIND_TABLE_CACHE_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tprof/analysis/unwind_table.h"
#include "tprof/analysis/unwind_table_store.h"

namespace tprof {

class UnwindTableCache {
 public:
  // store: where tables of files with a build id are read from and
  // written to; none: every table is built.
  explicit UnwindTableCache(std::optional<UnwindTableStore> store = std::nullopt);

  // The table of a mapped file, built at the first call; null if it has
  // none. "[vdso]" is this process's vDSO (every 64-bit process of this
  // kernel maps the same); other pseudo files ("[anon:...]") have none.
  [[nodiscard]] const UnwindTable* Get(const std::string& path);
  // The table if it was built already, without building it.
  [[nodiscard]] const UnwindTable* Find(const std::string& path) const;
  // The table if it was built already or the store has it (read now),
  // without building it: an earlier recording's samples went through the
  // file, so this one's likely will, and reading costs little.
  [[nodiscard]] const UnwindTable* FindOrReadStored(const std::string& path);
  // The files given a table since the last call, in the order built.
  [[nodiscard]] std::vector<std::string> TakeNewlyBuilt();
  // Files tried that have no usable table.
  [[nodiscard]] uint64_t files_without() const { return files_without_; }
  // Tables read from the store, and built here.
  [[nodiscard]] uint64_t stored() const { return stored_; }
  [[nodiscard]] uint64_t built() const { return built_; }

 private:
  // The file's table from the store, else built (and stored).
  Expected<UnwindTable> Build(const std::string& path);

  std::map<std::string, std::unique_ptr<UnwindTable>> tables_;  // null: none
  std::vector<std::string> newly_built_;
  std::set<std::string> not_stored_;  // FindOrReadStored found none
  std::optional<UnwindTableStore> store_;
  uint64_t files_without_ = 0, stored_ = 0, built_ = 0;
};

}  // namespace tprof

#endif  // TPROF_UNWIND_TABLE_CACHE_H_
