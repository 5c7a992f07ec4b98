#include "tprof/analysis/unwind_table_cache.h"

#include <fcntl.h>
#include <libelf.h>

#include <cerrno>
#include <utility>

#include "tprof/analysis/elf_snapshot.h"
#include "tprof/base/scoped_fd.h"

namespace tprof {

UnwindTableCache::UnwindTableCache(std::optional<UnwindTableStore> store)
    : store_(std::move(store)) {}

Expected<UnwindTable> UnwindTableCache::Build(const std::string& path) {
  if (path == "[vdso]") return BuildVdsoUnwindTable();
  if (path.empty() || path[0] != '/') return Error::FromErrno(ENOENT, path);
  elf_version(EV_CURRENT);
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::FromErrno(errno, path);
  Elf* elf = elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr);
  if (!elf) return Error::FromErrno(EINVAL, path + ": not an ELF file");
  // The build id and the rows from the same open file, so that the store
  // never pairs one version's id with another's rows.
  const std::string id = store_ ? ElfBuildId(elf) : std::string();
  std::optional<UnwindTable> stored = id.empty() ? std::nullopt : store_->Read(id);
  if (stored) {
    elf_end(elf);
    stored_++;
    return std::move(*stored);
  }
  auto t = BuildUnwindTable(elf);
  elf_end(elf);
  if (!t) return t;
  built_++;
  if (!id.empty()) store_->Write(id, *t);
  return t;
}

const UnwindTable* UnwindTableCache::Get(const std::string& path) {
  auto [it, inserted] = tables_.try_emplace(path);
  if (!inserted) return it->second.get();
  auto built = Build(path);
  if (!built || built->rows.empty()) {
    files_without_++;
    return nullptr;
  }
  it->second = std::make_unique<UnwindTable>(std::move(*built));
  newly_built_.push_back(path);
  return it->second.get();
}

const UnwindTable* UnwindTableCache::FindOrReadStored(const std::string& path) {
  if (auto it = tables_.find(path); it != tables_.end()) return it->second.get();
  if (!store_ || path.empty() || path[0] != '/' || not_stored_.count(path)) return nullptr;
  const std::string id = FileBuildId(path);
  std::optional<UnwindTable> stored = id.empty() ? std::nullopt : store_->Read(id);
  if (!stored) {
    not_stored_.insert(path);
    return nullptr;
  }
  stored_++;
  return tables_.emplace(path, std::make_unique<UnwindTable>(std::move(*stored))).first->second.get();
}

const UnwindTable* UnwindTableCache::Find(const std::string& path) const {
  auto it = tables_.find(path);
  return it == tables_.end() ? nullptr : it->second.get();
}

std::vector<std::string> UnwindTableCache::TakeNewlyBuilt() {
  return std::exchange(newly_built_, {});
}

}  // namespace tprof
