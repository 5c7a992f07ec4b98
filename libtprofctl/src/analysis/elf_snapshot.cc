#include "tprof/analysis/elf_snapshot.h"

#include <elf.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <libelf.h>
#include <link.h>
#include <sys/auxv.h>

#include <algorithm>
#include <cstdio>

#include "tprof/base/scoped_fd.h"

namespace tprof {

std::string ElfBuildId(Elf* elf) {
  std::string hex;
  const void* id = nullptr;
  ssize_t len = elf && elf_kind(elf) == ELF_K_ELF ? dwelf_elf_gnu_build_id(elf, &id) : -1;
  for (ssize_t i = 0; i < len; ++i) {
    char b[3];
    std::snprintf(b, sizeof(b), "%02x", static_cast<const unsigned char*>(id)[i]);
    hex += b;
  }
  return hex;
}

std::string FileBuildId(const std::string& path) {
  elf_version(EV_CURRENT);
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return "";
  Elf* elf = elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr);
  if (!elf) return "";
  std::string hex = ElfBuildId(elf);
  elf_end(elf);
  return hex;
}

std::string VdsoImage() {
  const auto* ehdr = reinterpret_cast<const ElfW(Ehdr)*>(getauxval(AT_SYSINFO_EHDR));
  if (!ehdr) return "";
  // The kernel builds the image with its section headers at the end; the
  // segments bound it too, in case a kernel ever leaves those out.
  size_t size = ehdr->e_shoff + size_t{ehdr->e_shnum} * ehdr->e_shentsize;
  const auto* phdr = reinterpret_cast<const ElfW(Phdr)*>(
      reinterpret_cast<const char*>(ehdr) + ehdr->e_phoff);
  for (int i = 0; i < ehdr->e_phnum; ++i)
    size = std::max<size_t>(size, phdr[i].p_offset + phdr[i].p_filesz);
  // Sanity: the vDSO is a few pages; a wild header must not make us read on.
  if (size == 0 || size > (1u << 20)) return "";
  return std::string(reinterpret_cast<const char*>(ehdr), size);
}

std::vector<RebuiltFile> RebuiltFiles(const Profile& profile) {
  std::vector<RebuiltFile> out;
  for (const auto& [path, recorded] : profile.build_ids) {
    std::string now = FileBuildId(path);
    if (now != recorded) out.push_back({path, recorded, now});
  }
  return out;
}

}  // namespace tprof
