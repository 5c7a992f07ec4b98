#include "device/unwind_loader.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "device/ioctl_errors.h"
#include "tprof/device/device.h"

namespace tprof {

UnwindLoader::UnwindLoader(int session_fd, uint32_t self_pid,
                           std::shared_ptr<UnwindTableCache> tables, bool build_mapped)
    : fd_(session_fd), self_pid_(self_pid), tables_(std::move(tables)), build_mapped_(build_mapped) {
  tprof_info info{};
  signal_rows_ = ::ioctl(fd_, TPROF_IOC_GET_INFO, &info) == 0 &&
                 (FeaturesOf(info) & TPROF_FEAT_UNWIND_SIGNAL_FRAMES);
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf));
  if (n > 0 && size_t(n) < sizeof(buf)) self_exe_.assign(buf, size_t(n));
}

void UnwindLoader::Note(const tprof_rec_header* rec, size_t avail) {
  if (rec->type == TPROF_REC_MAP && rec->size > sizeof(tprof_rec_map) && rec->size <= avail) {
    tprof_rec_map m;
    std::memcpy(&m, rec, sizeof(m));
    // Not the recorder's own (system-wide): its tables would cost it the
    // time it needs to drain the buffers, to walk its own frames.
    if (m.pid == self_pid_) return;
    const char* path = reinterpret_cast<const char*>(rec) + sizeof(m);
    const size_t room = rec->size - sizeof(m);
    Mapped& to = spaces_[m.space_id][m.start];
    to = {m.end, m.pgoff, std::string(path, strnlen(path, room))};
    changed_.insert(m.space_id);
    spaces_of_pid_[m.pid].insert(m.space_id);
    unchanged_flushes_[m.space_id] = 0;
  } else if (rec->type == TPROF_REC_SAMPLE && rec->size >= sizeof(tprof_rec_sample) &&
             rec->size <= avail) {
    // A copy comes only where no table covered the walk: the space's MAP
    // records (all of them, or a library's loaded since) are what it
    // needs, until a few flushes have brought nothing new (code without
    // CFI, JIT code, stays uncovered).
    tprof_rec_sample s;
    std::memcpy(&s, rec, sizeof(s));
    if ((s.flags & TPROF_SAMPLE_USER_STACK) && unchanged_flushes_[s.space_id] < kFlushesPerChange) {
      needs_mappings_ = true;
      waiting_.insert(s.space_id);
    }
  } else if (rec->type == TPROF_REC_EXIT && rec->size >= sizeof(tprof_rec_exit) &&
             rec->size <= avail) {
    tprof_rec_exit e;
    std::memcpy(&e, rec, sizeof(e));
    exited_.insert(e.pid);
  }
}

void UnwindLoader::Flushed() {
  for (uint64_t space : waiting_) unchanged_flushes_[space]++;
  waiting_.clear();
}

void UnwindLoader::Sync() {
  for (uint32_t pid : exited_) {
    auto it = spaces_of_pid_.find(pid);
    if (it == spaces_of_pid_.end()) continue;
    for (uint64_t space : it->second) Forget(space);
    spaces_of_pid_.erase(it);
  }
  exited_.clear();
  // The spaces that map a file whose table a walk just built.
  const std::vector<std::string> built = tables_->TakeNewlyBuilt();
  if (!built.empty()) {
    const std::set<std::string> paths(built.begin(), built.end());
    for (const auto& [space, maps] : spaces_)
      for (const auto& [start, m] : maps)
        if (paths.count(m.path)) {
          changed_.insert(space);
          break;
        }
  }
  for (uint64_t space : changed_)
    if (spaces_.count(space)) SendSpace(space);
  changed_.clear();
  needs_mappings_ = false;
}

void UnwindLoader::Fail(const Error& e) {
  if (!stats_.failures++) stats_.first_failure = e.message();
}

uint32_t UnwindLoader::Load(const std::string& path, const UnwindTable& table) {
  auto [it, inserted] = files_.try_emplace(path, 0);
  if (!inserted) return it->second;
  if (table.rows.size() > TPROF_UNWIND_MAX_ROWS) {
    stats_.files_without++;
    return 0;
  }
  // A module older than signal-frame rows (ABI 1.20) refuses them: for it
  // the walk stops there, as at any CFI the rows cannot state.
  std::vector<tprof_unwind_row> older;
  const tprof_unwind_row* rows = table.rows.data();
  if (!signal_rows_ && std::any_of(table.rows.begin(), table.rows.end(), [](const auto& r) {
        return r.cfa_base == TPROF_UNWIND_CFA_SIGNAL;
      })) {
    older = table.rows;
    for (tprof_unwind_row& r : older)
      if (r.cfa_base == TPROF_UNWIND_CFA_SIGNAL) {
        const uint32_t start = r.start;
        r = tprof_unwind_row{};
        r.start = start;
        r.cfa_base = TPROF_UNWIND_CFA_UNSTATED;
      }
    rows = older.data();
  }
  tprof_unwind_load arg{};
  arg.rows = reinterpret_cast<uintptr_t>(rows);
  arg.nr_rows = static_cast<uint32_t>(table.rows.size());
  if (::ioctl(fd_, TPROF_IOC_UNWIND_LOAD, &arg) != 0) {
    Fail(IoctlFailure("loading the unwind table of " + path, TPROF_IOC_UNWIND_LOAD, errno));
    return 0;
  }
  it->second = arg.table_id;
  stats_.tables++;
  stats_.table_bytes += table.rows.size() * sizeof(tprof_unwind_row);
  return arg.table_id;
}

void UnwindLoader::SendSpace(uint64_t space_id) {
  std::vector<tprof_unwind_range> ranges;
  const auto& maps = spaces_[space_id];
  // A space that maps the recorder's own program is the recorder's forked
  // child before it execs the command: a moment's samples, and the tables
  // of every library tprofctl links would delay the command's own.
  for (const auto& [start, m] : maps)
    if (!self_exe_.empty() && m.path == self_exe_) return;
  for (const auto& [start, m] : maps) {
    // Only files a walk went through have a table: built in this
    // recording or stored by an earlier one (see the header).
    const UnwindTable* table =
        build_mapped_ ? tables_->Get(m.path) : tables_->FindOrReadStored(m.path);
    if (!table) continue;
    const uint32_t id = Load(m.path, *table);
    if (!id) continue;
    // The segment the mapping's file offset falls in: pc - bias is then
    // the address the table's rows use.
    for (const UnwindTable::Segment& s : table->segments) {
      if (m.pgoff < s.offset || m.pgoff - s.offset >= s.filesz) continue;
      tprof_unwind_range r{};
      r.start = start;
      r.end = std::min(m.end, start + (s.offset + s.filesz - m.pgoff));
      r.bias = start - (m.pgoff - s.offset + s.vaddr);
      r.table_id = id;
      if (!ranges.empty() && r.start < ranges.back().end) break;  // overlaps: keep the first
      ranges.push_back(r);
      break;
    }
  }
  if (ranges.size() > TPROF_UNWIND_MAX_RANGES) ranges.resize(TPROF_UNWIND_MAX_RANGES);
  if (ranges.empty() && !sent_.count(space_id)) return;
  tprof_unwind_space arg{};
  arg.space_id = space_id;
  arg.ranges = reinterpret_cast<uintptr_t>(ranges.data());
  arg.nr_ranges = static_cast<uint32_t>(ranges.size());
  if (::ioctl(fd_, TPROF_IOC_UNWIND_SPACE, &arg) != 0)
    return Fail(IoctlFailure("sending an address space's unwind ranges", TPROF_IOC_UNWIND_SPACE,
                             errno));
  stats_.spaces++;
  sent_.insert(space_id);
  std::vector<uint32_t> ids;
  for (const tprof_unwind_range& r : ranges) ids.push_back(r.table_id);
  Replace(space_id, std::move(ids));
}

void UnwindLoader::Replace(uint64_t space_id, std::vector<uint32_t> ids) {
  // As the module counts: the new ranges' tables first, then the old ones'.
  for (uint32_t id : ids) users_[id]++;
  std::vector<uint32_t>& held = tables_of_space_[space_id];
  for (uint32_t id : held)
    if (--users_[id] == 0) {
      // The module dropped it: a later use loads it again.
      users_.erase(id);
      for (auto it = files_.begin(); it != files_.end(); ++it)
        if (it->second == id) {
          files_.erase(it);
          break;
        }
    }
  held = std::move(ids);
  if (held.empty()) tables_of_space_.erase(space_id);
}

void UnwindLoader::Forget(uint64_t space_id) {
  spaces_.erase(space_id);
  unchanged_flushes_.erase(space_id);
  waiting_.erase(space_id);
  changed_.erase(space_id);
  if (!sent_.erase(space_id)) return;
  tprof_unwind_space arg{};
  arg.space_id = space_id;
  if (::ioctl(fd_, TPROF_IOC_UNWIND_SPACE, &arg) != 0)
    return Fail(IoctlFailure("forgetting an address space's unwind ranges",
                             TPROF_IOC_UNWIND_SPACE, errno));
  Replace(space_id, {});
}

}  // namespace tprof
