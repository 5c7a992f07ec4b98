#include "tprof/analysis/unwind_table_store.h"

#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "tprof/base/output_file.h"
#include "tprof/base/scoped_fd.h"

namespace tprof {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'T', 'P', 'U', 'N', 'W', 'T', '0', '1'};
struct FileHeader {
  char magic[8];
  uint32_t nr_segments;
  uint32_t nr_rows;
  uint64_t functions;
  uint64_t unsupported;
};
struct StoredSegment {
  uint64_t offset, vaddr, filesz;
};
constexpr uint32_t kMaxSegments = 64;
constexpr uint32_t kMaxRows = 1u << 24;

// Lower-case hex, as ElfBuildId writes it: nothing else names a file.
bool IsBuildId(const std::string& s) {
  return !s.empty() && s.size() <= 128 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool ReadAll(int fd, void* to, size_t bytes, off_t at) {
  auto* p = static_cast<char*>(to);
  while (bytes) {
    const ssize_t n = ::pread(fd, p, bytes, at);
    if (n <= 0) return false;
    p += n;
    at += n;
    bytes -= size_t(n);
  }
  return true;
}

struct BuilderSearch {
  uintptr_t address;
  std::string id;
};

// dl_iterate_phdr's callback: the GNU build id note of the object one of
// whose loaded segments holds search->address.
int FindBuilder(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<BuilderSearch*>(data);
  bool holds = false;
  for (int i = 0; i < info->dlpi_phnum && !holds; i++) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    holds = ph.p_type == PT_LOAD && search->address >= start &&
            search->address - start < ph.p_memsz;
  }
  if (!holds) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    size_t left = ph.p_memsz;
    while (left >= sizeof(ElfW(Nhdr))) {
      ElfW(Nhdr) n;
      std::memcpy(&n, p, sizeof(n));
      const size_t name = (size_t{n.n_namesz} + 3) & ~size_t{3};
      const size_t desc = (size_t{n.n_descsz} + 3) & ~size_t{3};
      if (name > left - sizeof(n) || desc > left - sizeof(n) - name) break;
      const unsigned char* name_at = p + sizeof(n);
      if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && std::memcmp(name_at, "GNU", 4) == 0) {
        for (size_t k = 0; k < n.n_descsz; k++) {
          char b[3];
          std::snprintf(b, sizeof(b), "%02x", name_at[name + k]);
          search->id += b;
        }
        return 1;
      }
      p += sizeof(n) + name + desc;
      left -= sizeof(n) + name + desc;
    }
  }
  return 1;
}

}  // namespace

std::string UnwindTableBuilderId() {
  static const std::string id = [] {
    BuilderSearch search{reinterpret_cast<uintptr_t>(&UnwindTableBuilderId), {}};
    ::dl_iterate_phdr(FindBuilder, &search);
    return search.id;
  }();
  return id;
}

std::optional<UnwindTableStore> UnwindTableStore::ForUser() {
  const std::string builder = UnwindTableBuilderId();
  if (builder.empty()) return std::nullopt;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string base;
  if (xdg && xdg[0] == '/')
    base = xdg;
  else if (home && home[0] == '/')
    base = std::string(home) + "/.cache";
  else
    return std::nullopt;
  return UnwindTableStore(base + "/tprof/unwind-tables", builder);
}

UnwindTableStore::UnwindTableStore(std::string dir, std::string builder_id, uint64_t max_bytes)
    : dir_(std::move(dir)), builder_id_(std::move(builder_id)), max_bytes_(max_bytes) {}

std::string UnwindTableStore::PathOf(const std::string& file_build_id) const {
  return dir_ + "/" + file_build_id + "-" + builder_id_.substr(0, 16) + ".rows";
}

std::optional<UnwindTable> UnwindTableStore::Read(const std::string& file_build_id) const {
  if (!IsBuildId(file_build_id)) return std::nullopt;
  ScopedFd fd(::open(PathOf(file_build_id).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st;
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
    return std::nullopt;
  FileHeader h;
  if (!ReadAll(fd.get(), &h, sizeof(h), 0) || std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0 ||
      h.nr_segments > kMaxSegments || h.nr_rows == 0 || h.nr_rows > kMaxRows)
    return std::nullopt;
  const uint64_t segments_at = sizeof(h);
  const uint64_t rows_at = segments_at + uint64_t{h.nr_segments} * sizeof(StoredSegment);
  if (uint64_t(st.st_size) != rows_at + uint64_t{h.nr_rows} * sizeof(tprof_unwind_row))
    return std::nullopt;
  std::vector<StoredSegment> segments(h.nr_segments);
  UnwindTable t;
  t.rows.resize(h.nr_rows);
  if (!ReadAll(fd.get(), segments.data(), segments.size() * sizeof(StoredSegment),
               off_t(segments_at)) ||
      !ReadAll(fd.get(), t.rows.data(), t.rows.size() * sizeof(tprof_unwind_row), off_t(rows_at)))
    return std::nullopt;
  for (const StoredSegment& s : segments) t.segments.push_back({s.offset, s.vaddr, s.filesz});
  t.functions = h.functions;
  t.unsupported = h.unsupported;
  // Used now: the pruning keeps the most recently used.
  (void)::futimens(fd.get(), nullptr);
  return t;
}

void UnwindTableStore::Write(const std::string& file_build_id, const UnwindTable& t) const {
  if (!IsBuildId(file_build_id) || t.rows.empty() || t.rows.size() > kMaxRows ||
      t.segments.size() > kMaxSegments)
    return;
  std::error_code ec;
  fs::create_directories(fs::path(dir_).parent_path(), ec);
  if (ec || (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST)) return;
  FileHeader h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.nr_segments = static_cast<uint32_t>(t.segments.size());
  h.nr_rows = static_cast<uint32_t>(t.rows.size());
  h.functions = t.functions;
  h.unsupported = t.unsupported;
  std::string data(reinterpret_cast<const char*>(&h), sizeof(h));
  for (const UnwindTable::Segment& s : t.segments) {
    const StoredSegment d{s.offset, s.vaddr, s.filesz};
    data.append(reinterpret_cast<const char*>(&d), sizeof(d));
  }
  data.append(reinterpret_cast<const char*>(t.rows.data()),
              t.rows.size() * sizeof(tprof_unwind_row));
  if (!WriteFileAtomically(PathOf(file_build_id), data)) return;
  Prune();
}

void UnwindTableStore::Prune() const {
  struct Kept {
    fs::file_time_type used;
    uint64_t bytes;
    fs::path path;
  };
  std::vector<Kept> files;
  uint64_t total = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    if (!e.is_regular_file(ec) || e.path().extension() != ".rows") continue;
    const uint64_t bytes = e.file_size(ec);
    const fs::file_time_type used = e.last_write_time(ec);
    if (ec) continue;
    files.push_back({used, bytes, e.path()});
    total += bytes;
  }
  if (total <= max_bytes_) return;
  std::sort(files.begin(), files.end(),
            [](const Kept& a, const Kept& b) { return a.used < b.used; });
  // Down to three quarters, so that the next writes do not prune again.
  for (const Kept& f : files) {
    if (total <= max_bytes_ / 4 * 3) break;
    if (fs::remove(f.path, ec)) total -= f.bytes;
  }
}

}  // namespace tprof
