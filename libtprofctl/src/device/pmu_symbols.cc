// SymbolResolver: a live process's symbols at their run-time addresses,
// from /proc/PID/maps and the ELF symbol tables of its file mappings.
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cxxabi.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "tprof/device/pmu_spec.h"
#include "tprof/base/scoped_fd.h"

namespace tprof::pmu {
namespace {

struct Mapping {
  uint64_t start, end, pgoff;
};

std::string Basename(std::string_view p) {
  auto slash = p.rfind('/');
  return std::string(slash == std::string_view::npos ? p : p.substr(slash + 1));
}

// The file's function and object symbols, placed through its mappings.
void AddFileSymbols(const std::string& path, const std::vector<Mapping>& maps,
                    std::vector<SymbolResolver::Symbol>* out) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return;
  Elf* elf = elf_begin(fd.get(), ELF_C_READ, nullptr);
  if (!elf) return;
  std::vector<GElf_Phdr> loads;
  size_t nph = 0;
  if (elf_getphdrnum(elf, &nph) == 0)
    for (size_t i = 0; i < nph; i++) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, int(i), &ph) && ph.p_type == PT_LOAD) loads.push_back(ph);
    }
  // The load bias (run-time minus link-time address, the same for every
  // segment): from a mapping of the file and the PT_LOAD whose file bytes
  // it maps (its pgoff may be below p_offset by the page rounding).
  std::optional<uint64_t> bias;
  for (const Mapping& m : maps) {
    for (const GElf_Phdr& ph : loads) {
      uint64_t align = ph.p_align > 1 ? ph.p_align : 1;
      if (m.pgoff < (ph.p_offset & ~(align - 1)) || m.pgoff >= ph.p_offset + ph.p_filesz) continue;
      bias = m.start - (ph.p_vaddr + m.pgoff - ph.p_offset);
      break;
    }
    if (bias) break;
  }
  // .symtab if present (it has the local symbols), else .dynsym.
  Elf_Scn* chosen = nullptr;
  GElf_Shdr chosen_sh{};
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    if (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !chosen)) {
      chosen = scn;
      chosen_sh = sh;
    }
  }
  if (chosen && chosen_sh.sh_entsize) {
    Elf_Data* data = elf_getdata(chosen, nullptr);
    size_t n = chosen_sh.sh_size / chosen_sh.sh_entsize;
    std::string file;
    for (size_t i = 0; data && i < n; i++) {
      GElf_Sym sym;
      if (!gelf_getsym(data, int(i), &sym)) continue;
      const char* name = elf_strptr(elf, chosen_sh.sh_link, sym.st_name);
      int type = GELF_ST_TYPE(sym.st_info);
      if (type == STT_FILE) {
        file = name ? Basename(name) : "";
        continue;
      }
      if ((type != STT_FUNC && type != STT_OBJECT) || !name || !*name || sym.st_shndx == SHN_UNDEF)
        continue;
      // Link-time address + the file's load bias. Not through the mapping
      // of the symbol's file offset: .bss past the last file page is in
      // an anonymous mapping, which names no file.
      for (const GElf_Phdr& ph : loads) {
        if (sym.st_value < ph.p_vaddr || sym.st_value >= ph.p_vaddr + ph.p_memsz) continue;
        if (bias)
          out->push_back({name, GELF_ST_BIND(sym.st_info) == STB_LOCAL ? file : "", sym.st_value + *bias,
                          sym.st_size});
        break;
      }
    }
  }
  elf_end(elf);
}

// A C++ symbol matches its demangled name, with or without the
// parameter list ("ns::f" or "ns::f(int)").
bool DemangledMatches(const std::string& mangled, std::string_view name) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (!d) return false;
  std::string_view full(d);
  bool ok = full == name || (full.size() > name.size() && full.substr(0, name.size()) == name &&
                             full[name.size()] == '(');
  std::free(d);
  return ok;
}

}  // namespace

Expected<SymbolResolver> SymbolResolver::ForProcess(pid_t pid) {
  elf_version(EV_CURRENT);
  std::string maps_path = pid ? "/proc/" + std::to_string(pid) + "/maps" : "/proc/self/maps";
  std::ifstream in(maps_path);
  if (!in) return Error::FromErrno(errno ? errno : ESRCH, "cannot read " + maps_path);
  // Files in the order they are mapped (the main executable first), so a
  // name defined twice resolves to the executable's.
  std::map<std::string, std::vector<Mapping>> files;
  std::vector<std::string> order;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string range, perms, off, dev, inode, path;
    ls >> range >> perms >> off >> dev >> inode;
    std::getline(ls >> std::ws, path);
    if (path.empty() || path[0] != '/') continue;
    auto dash = range.find('-');
    Mapping m{std::stoull(range.substr(0, dash), nullptr, 16), std::stoull(range.substr(dash + 1), nullptr, 16),
              std::stoull(off, nullptr, 16)};
    if (!files.count(path)) order.push_back(path);
    files[path].push_back(m);
  }
  SymbolResolver r;
  for (const std::string& path : order) {
    const std::vector<Mapping>& maps = files[path];
    // A process's own files through /proc/PID/root: the right file even
    // when the process lives in another mount namespace.
    std::string file = pid ? "/proc/" + std::to_string(pid) + "/root" + path : path;
    AddFileSymbols(file, maps, &r.symbols_);
  }
  return r;
}

Expected<AddressRange> SymbolResolver::Find(std::string_view symbol) const {
  std::string_view file, name = symbol;
  if (auto colon = symbol.rfind(':'); colon != std::string_view::npos) {
    file = symbol.substr(0, colon);
    name = symbol.substr(colon + 1);
  }
  for (const Symbol& s : symbols_) {
    if (!file.empty() && s.file != Basename(file)) continue;
    if (s.name != name && !(s.name.starts_with("_Z") && DemangledMatches(s.name, name))) continue;
    if (s.size == 0) return Error::FromErrno(EINVAL, "symbol '" + std::string(symbol) + "' has no size");
    return AddressRange{s.start, s.start + s.size};
  }
  return Error::FromErrno(ENOENT, "no symbol '" + std::string(symbol) + "' in the process's files");
}

}  // namespace tprof::pmu
