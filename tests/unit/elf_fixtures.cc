#include "elf_fixtures.h"

#include <fcntl.h>
#include <libelf.h>
#include <unistd.h>

#include <climits>
#include <fstream>
#include <sstream>

namespace tprof::test {

std::string SymFiles() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  std::string exe(buf, n > 0 ? static_cast<size_t>(n) : 0);
  return exe.substr(0, exe.rfind('/')) + "/symfiles";
}

namespace {

// The symbol `name` in elf's sections of type sh_type; st_value 0 if none.
GElf_Sym FindSymbol(Elf* elf, uint32_t sh_type, const std::string& name) {
  Elf_Scn* scn = nullptr;
  while (elf && (scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != sh_type || sh.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; ++i) {
      GElf_Sym sym;
      const char* s = gelf_getsym(data, static_cast<int>(i), &sym)
                          ? elf_strptr(elf, sh.sh_link, sym.st_name)
                          : nullptr;
      if (s && name == s) return sym;
    }
  }
  return GElf_Sym{};
}

GElf_Sym FullSymbol(const std::string& name) {
  elf_version(EV_CURRENT);
  int fd = ::open((SymFiles() + "/full/libsymtest.so").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return GElf_Sym{};
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  const GElf_Sym sym = FindSymbol(elf, SHT_SYMTAB, name);
  if (elf) elf_end(elf);
  ::close(fd);
  return sym;
}

}  // namespace

uint64_t ElfSymbol(Elf* elf, uint32_t sh_type, const std::string& name) {
  return FindSymbol(elf, sh_type, name).st_value;
}

uint64_t SymbolAddress(const std::string& name) { return FullSymbol(name).st_value; }

uint64_t SymbolSize(const std::string& name) { return FullSymbol(name).st_size; }

Profile LibraryProfile(const std::string& path, uint64_t base) {
  Profile p;
  elf_version(EV_CURRENT);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  Elf* elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, nullptr) : nullptr;
  size_t n = 0;
  if (elf && elf_getphdrnum(elf, &n) == 0) {
    for (size_t i = 0; i < n; ++i) {
      GElf_Phdr ph;
      if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
      p.mappings[{kSymPid, kSymSpace}].push_back({base + (ph.p_vaddr & ~0xfffull),
                                                  base + ph.p_vaddr + ph.p_memsz,
                                                  ph.p_offset & ~0xfffull, path});
    }
  }
  if (elf) elf_end(elf);
  if (fd >= 0) ::close(fd);
  return p;
}

Profile SelfProfile(uint32_t pid, uint64_t space) {
  Profile p;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, path;
    in >> range >> perms >> offset >> dev >> inode;
    std::getline(in >> std::ws, path);
    if (perms.size() < 3 || perms[2] != 'x' || path.empty()) continue;
    Mapping m;
    m.start = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    m.end = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
    m.pgoff = std::stoull(offset, nullptr, 16);
    m.path = path;
    p.mappings[{pid, space}].push_back(m);
  }
  return p;
}

}  // namespace tprof::test
