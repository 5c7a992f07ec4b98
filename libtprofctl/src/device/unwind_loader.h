// Feeds a sampling session's sample handler the unwind tables of the files
// its address spaces map (TPROF_SAMPLING_USER_CFI, ABI 1.19). A file's table
// is built when a sample's stack first goes through it: the module copies
// the stack of a sample whose walk meets code without a loaded table, the
// recorder walks the copy (StackUnwinder), which builds the tables it uses
// into the cache shared with this loader. A mapped file whose table an
// earlier recording stored is read at once instead (unwind_table_store.h).
// Without copies (counted stacks) the tables of every file a sampled space
// maps are built when its mappings come. Each table is loaded once per
// session (TPROF_IOC_UNWIND_LOAD), and each space that maps it, or
// whose mappings changed, is sent whole (TPROF_IOC_UNWIND_SPACE). A
// process's spaces are forgotten at its EXIT, and a table with them once no
// space uses it (the module drops it; the cache keeps the rows). Building
// only what samples need keeps -a cheap: a machine maps hundreds of files
// that are never sampled. Internal to the recorder: not installed with the
// public headers.
#pragma once

#include <linux/tprof.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tprof/analysis/unwind_table_cache.h"
#include "tprof/base/expected.h"

namespace tprof {

class UnwindLoader {
 public:
  // self_pid: the recorder's pid in the records' namespace (its spaces get
  // no tables, nor do spaces that map its program: its child before exec).
  // tables: shared with the ProfileBuilder that walks the copies.
  // build_mapped: the session takes no copies (counted stacks, record
  // --aggregate -g), so no walk builds a table: every file a sampled
  // space maps gets one when the space's mappings come.
  UnwindLoader(int session_fd, uint32_t self_pid, std::shared_ptr<UnwindTableCache> tables,
               bool build_mapped = false);

  // A record the recorder read (MAP and EXIT matter; the rest is ignored).
  void Note(const tprof_rec_header* rec, size_t avail);
  // Loads the tables built since the last call and the tables of the
  // mappings the records noted since, and sends each changed space. Failures are counted (stats), never fatal: a sample
  // whose code has no table is walked by frame pointers or its copy.
  void Sync();

  // Samples whose walk met code without a loaded table came since the last
  // Sync(): their space's MAP records may wait in another CPU's partial
  // half. The recorder then flushes the halves and says so (Flushed()).
  bool needs_mappings() const { return needs_mappings_; }
  void Flushed();

  struct Stats {
    uint64_t tables = 0;          // loaded
    uint64_t table_bytes = 0;     // their rows
    uint64_t files_without = 0;   // files sampled through without a usable table
    uint64_t spaces = 0;          // sent (each change counts)
    uint64_t failures = 0;        // ioctls the module refused
    std::string first_failure;    // the first refusal's message
  };
  const Stats& stats() const { return stats_; }
  // Files sampled through whose table could not be built.
  uint64_t files_without() const { return tables_->files_without(); }
  // Tables built from CFI (the rest came from the store).
  uint64_t tables_built() const { return tables_->built(); }

 private:
  struct Mapped {
    uint64_t end = 0, pgoff = 0;
    std::string path;
  };
  // The module's id of the file's table, loading it if it was built; 0
  // if it was not (yet), or the module refused it.
  uint32_t Load(const std::string& path, const UnwindTable& table);
  void SendSpace(uint64_t space_id);
  void Forget(uint64_t space_id);
  // The tables a space's sent ranges use now: ids, per range.
  void Replace(uint64_t space_id, std::vector<uint32_t> ids);
  void Fail(const Error& e);

  int fd_;
  uint32_t self_pid_;
  std::string self_exe_;  // /proc/self/exe
  std::shared_ptr<UnwindTableCache> tables_;
  std::map<uint64_t, std::map<uint64_t, Mapped>> spaces_;  // space -> start -> mapping
  std::set<uint64_t> changed_;
  std::set<uint64_t> sent_;
  std::map<uint32_t, std::set<uint64_t>> spaces_of_pid_;
  std::set<uint32_t> exited_;
  // Files whose tables are loaded (id), or were refused (0); a table the
  // module dropped with its last user leaves, to be loaded again when used.
  std::map<std::string, uint32_t> files_;
  std::map<uint64_t, std::vector<uint32_t>> tables_of_space_;
  std::map<uint32_t, unsigned> users_;  // as the module counts them
  bool needs_mappings_ = false;
  bool build_mapped_ = false;
  bool signal_rows_ = false;  // the module takes TPROF_UNWIND_CFA_SIGNAL (ABI 1.20)
  // Per space, flushes asked for since its mappings last changed: at most
  // kFlushesPerChange.
  static constexpr unsigned kFlushesPerChange = 4;
  std::map<uint64_t, unsigned> unchanged_flushes_;
  std::set<uint64_t> waiting_;
  Stats stats_;
};

}  // namespace tprof
