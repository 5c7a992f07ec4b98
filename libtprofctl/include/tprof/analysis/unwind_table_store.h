// Unwind tables kept on disk between recordings, one file per pair of the
// ELF file's build id and the table builder's own build id. Building a
// table reads every row of a file's CFI (libc's takes about as many
// instructions as a second of 1 kHz samples cost the sampler), so a
// recording reads the tables an earlier one built instead, as perf keeps
// its build-id cache. A builder that changes (any rebuild of the library
// that builds the tables) writes under a new name, so a table is never read
// by a builder that did not make it. The directory is bounded: writing
// prunes the least recently used files beyond kMaxBytes.
#ifndef TPROF_UNWIND_TABLE_STORE_H_
#define TPROF_UNWIND_TABLE_STORE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "tprof/analysis/unwind_table.h"

namespace tprof {

class UnwindTableStore {
 public:
  static constexpr uint64_t kMaxBytes = 256ull << 20;

  // The user's store, ${XDG_CACHE_HOME:-$HOME/.cache}/tprof/unwind-tables;
  // none if neither variable is set or this library has no build id.
  [[nodiscard]] static std::optional<UnwindTableStore> ForUser();
  // A store in dir (created 0700 at the first write), for tables made by a
  // builder whose identity is builder_id, pruned beyond max_bytes.
  UnwindTableStore(std::string dir, std::string builder_id, uint64_t max_bytes = kMaxBytes);

  // The table of the file whose build id is file_build_id, if this builder
  // wrote one that is whole and owned by this user.
  [[nodiscard]] std::optional<UnwindTable> Read(const std::string& file_build_id) const;
  // Keeps t (best effort: a failure only costs the next recording a build).
  void Write(const std::string& file_build_id, const UnwindTable& t) const;

  const std::string& dir() const { return dir_; }

 private:
  std::string PathOf(const std::string& file_build_id) const;
  void Prune() const;

  std::string dir_;
  std::string builder_id_;
  uint64_t max_bytes_;
};

// The build id of the loaded object that holds the table builder (this
// library, or the program it is linked into), in hex; "" without one.
[[nodiscard]] std::string UnwindTableBuilderId();

}  // namespace tprof

#endif  // TPROF_UNWIND_TABLE_STORE_H_
