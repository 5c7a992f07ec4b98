#include "tprof/analysis/archive.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <libelf.h>

#include <filesystem>
#include <fstream>
#include <system_error>

#include "tprof/analysis/profile_file.h"
#include "tprof/base/scoped_fd.h"

namespace tprof {
namespace {

namespace fs = std::filesystem;

// The .gnu_debuglink name of the ELF file at path, "" without one.
std::string DebugLink(const std::string& path) {
  elf_version(EV_CURRENT);
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return "";
  Elf* elf = elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr);
  if (!elf) return "";
  GElf_Word crc = 0;
  const char* link = elf_kind(elf) == ELF_K_ELF ? dwelf_elf_gnu_debuglink(elf, &crc) : nullptr;
  std::string out = link ? link : "";
  elf_end(elf);
  return out;
}

// Where gdb and libdwfl look for path's separate debug file, in their order;
// only a candidate whose build id is the file's counts (a debuglink can name
// a stale file).
std::string FindDebugFile(const std::string& path, const std::string& build_id,
                          const std::string& debug_dir) {
  std::vector<std::string> candidates{SymfsPath(debug_dir, build_id, true)};
  std::string link = DebugLink(path);
  if (!link.empty()) {
    std::string dir = fs::path(path).parent_path().string();
    candidates.push_back(dir + "/" + link);
    candidates.push_back(dir + "/.debug/" + link);
    candidates.push_back(debug_dir + dir + "/" + link);
  }
  for (const std::string& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec) && FileBuildId(c) == build_id) return c;
  }
  return "";
}

Status CopyInto(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::create_directories(fs::path(to).parent_path(), ec);
  if (!ec) fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) return Error(ec, "copying " + from + " to " + to);
  return OkStatus();
}

}  // namespace

std::string SymfsPath(const std::string& symfs, const std::string& build_id, bool debug) {
  if (build_id.size() <= 2) return "";
  return symfs + "/.build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2) +
         (debug ? ".debug" : "");
}

Expected<ArchiveSummary> ArchiveProfile(const Profile& profile, const std::string& out_dir,
                                        const std::string& debug_dir) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return Error(ec, "creating " + out_dir);
  ArchiveSummary summary;
  std::string manifest;
  for (const auto& [path, recorded] : profile.build_ids) {
    if (recorded.size() <= 2) continue;
    std::string now = FileBuildId(path);
    if (now != recorded) {
      summary.skipped.push_back({path, recorded, now});
      continue;
    }
    if (Status s = CopyInto(path, SymfsPath(out_dir, recorded)); !s) return s.error();
    ArchivedFile file{path, recorded, false};
    std::string debug = FindDebugFile(path, recorded, debug_dir);
    if (!debug.empty()) {
      if (Status s = CopyInto(debug, SymfsPath(out_dir, recorded, true)); !s) return s.error();
      file.debug_file = true;
    }
    manifest += recorded + " " + path + "\n";
    summary.packed.push_back(std::move(file));
  }
  {
    std::ofstream out(out_dir + "/manifest", std::ios::trunc);
    out << manifest;
    if (!out.flush())
      return Error(std::make_error_code(std::errc::io_error), "writing " + out_dir + "/manifest");
  }
  if (Status s = WriteProfile(profile, out_dir + "/" + kArchiveProfileName); !s) return s.error();
  return summary;
}

}  // namespace tprof
