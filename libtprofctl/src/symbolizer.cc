#include "tprof/symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tprof/scoped_fd.h"

namespace tprof {

namespace {

struct ElfDeleter {
  void operator()(Elf* elf) const { elf_end(elf); }
};
struct DwarfDeleter {
  void operator()(Dwarf* dwarf) const { dwarf_end(dwarf); }
};
using ScopedElf = std::unique_ptr<Elf, ElfDeleter>;
using ScopedDwarf = std::unique_ptr<Dwarf, DwarfDeleter>;

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string Demangle(const char* name) {
  if (std::strncmp(name, "_Z", 2) != 0) return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string result = status == 0 && out ? out : name;
  std::free(out);
  return result;
}

// "libc.so.6", "libfoo.so", "ld-linux-x86-64.so.2": the names of shared
// objects by convention; an executable rarely has ".so" in its name.
bool LooksLikeSharedObject(const std::string& path) {
  std::string name = BaseName(path);
  size_t so = name.find(".so");
  while (so != std::string::npos) {
    size_t after = so + 3;
    if (after == name.size() || name[after] == '.') return true;
    so = name.find(".so", after);
  }
  return false;
}

// "/usr/lib/libc.so.6" but not pseudo names: "[vdso]", perf's "//anon".
bool IsFilePath(const std::string& path) {
  return path.size() > 1 && path[0] == '/' && path[1] != '/';
}

// Opens an ELF file read-only with its descriptor; both are owned.
struct OpenedElf {
  ScopedFd fd;
  ScopedElf elf;
};

bool OpenElfFile(const std::string& path, OpenedElf* out) {
  out->fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!out->fd) return false;
  out->elf.reset(elf_begin(out->fd.get(), ELF_C_READ_MMAP, nullptr));
  return out->elf && elf_kind(out->elf.get()) == ELF_K_ELF;
}

// The file's GNU build id (.note.gnu.build-id) in hex, "" without one.
std::string BuildIdHex(Elf* elf) {
  const void* id = nullptr;
  ssize_t len = dwelf_elf_gnu_build_id(elf, &id);
  std::string hex;
  for (ssize_t i = 0; i < len; ++i) {
    char b[3];
    std::snprintf(b, sizeof(b), "%02x", static_cast<const unsigned char*>(id)[i]);
    hex += b;
  }
  return hex;
}

}  // namespace

// One ELF file: its loadable segments, function symbols and DWARF lines
// (from the file itself, or from a separate debug file found by build id).
class Symbolizer::ElfObject {
 public:
  struct Function {
    uint64_t address;
    uint64_t size;
    std::string name;
  };

  static std::unique_ptr<ElfObject> Open(const std::string& path,
                                         const SymbolizerOptions& options) {
    auto obj = std::unique_ptr<ElfObject>(new ElfObject());
    if (!OpenElfFile(path, &obj->file_)) return nullptr;
    Elf* elf = obj->file_.elf.get();
    size_t nphdr = 0;
    if (elf_getphdrnum(elf, &nphdr) != 0) return nullptr;
    for (size_t i = 0; i < nphdr; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD)
        obj->loads_.push_back(ph);
    }
    obj->build_id_ = BuildIdHex(elf);
    obj->ReadFunctions(elf);
    if (options.source_lines) obj->OpenDwarf(options.debug_dir);
    std::sort(obj->functions_.begin(), obj->functions_.end(),
              [](const Function& a, const Function& b) {
                return a.address != b.address ? a.address < b.address : a.size > b.size;
              });
    // Aliases (same address) keep the first: the largest size.
    obj->functions_.erase(std::unique(obj->functions_.begin(), obj->functions_.end(),
                                      [](const Function& a, const Function& b) {
                                        return a.address == b.address;
                                      }),
                          obj->functions_.end());
    return obj;
  }

  // A file offset to the link-time virtual address of the segment holding it.
  bool FileOffsetToAddress(uint64_t offset, uint64_t* address) const {
    for (const GElf_Phdr& ph : loads_) {
      if (offset >= ph.p_offset && offset < ph.p_offset + ph.p_filesz) {
        *address = offset - ph.p_offset + ph.p_vaddr;
        return true;
      }
    }
    return false;
  }

  // The function containing address: a sized symbol that covers it, or the
  // nearest preceding symbol if that one has no size.
  const Function* FindFunction(uint64_t address) const {
    auto it = std::upper_bound(functions_.begin(), functions_.end(), address,
                               [](uint64_t a, const Function& f) { return a < f.address; });
    if (it == functions_.begin()) return nullptr;
    --it;
    if (it->size == 0) return &*it;
    // Walk back a little for an enclosing symbol (nested or overlapping).
    for (int steps = 0; steps < 16; ++steps, --it) {
      if (it->size != 0 && address < it->address + it->size) return &*it;
      if (it == functions_.begin()) break;
    }
    return nullptr;
  }

  const std::string& build_id() const { return build_id_; }

  bool SourceLine(uint64_t address, std::string* file, uint32_t* line) const {
    if (!dwarf_) return false;
    Dwarf_Die cu;
    if (!dwarf_addrdie(dwarf_.get(), address, &cu) && !FindCu(address, &cu)) return false;
    Dwarf_Line* l = dwarf_getsrc_die(&cu, address);
    int lineno = 0;
    const char* src = l ? dwarf_linesrc(l, nullptr, nullptr) : nullptr;
    if (!src || dwarf_lineno(l, &lineno) != 0) return false;
    *file = src;
    *line = static_cast<uint32_t>(lineno);
    return true;
  }

 private:
  ElfObject() = default;

  void ReadFunctions(Elf* elf) {
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf, scn)) != nullptr) {
      GElf_Shdr sh;
      if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
          sh.sh_entsize == 0)
        continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (!data) continue;
      size_t count = sh.sh_size / sh.sh_entsize;
      for (size_t i = 0; i < count; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
        int type = GELF_ST_TYPE(sym.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
            sym.st_value == 0)
          continue;
        const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
        if (name && *name) functions_.push_back({sym.st_value, sym.st_size, Demangle(name)});
      }
    }
  }

  static bool HasDebugInfo(Elf* elf) {
    size_t shstrndx = 0;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0) return false;
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf, scn)) != nullptr) {
      GElf_Shdr sh;
      const char* name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : nullptr;
      if (name && std::strcmp(name, ".debug_info") == 0 && sh.sh_type != SHT_NOBITS) return true;
    }
    return false;
  }

  void OpenDwarf(const std::string& debug_dir) {
    Elf* elf = file_.elf.get();
    if (!HasDebugInfo(elf)) {
      // A stripped file: its debug file by build id has the same addresses,
      // the DWARF and a full .symtab (static functions too).
      const std::string& hex = build_id_;
      if (hex.size() < 4) return;
      std::string path = debug_dir + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
      if (!OpenElfFile(path, &debug_file_)) return;
      elf = debug_file_.elf.get();
      ReadFunctions(elf);
    }
    dwarf_.reset(dwarf_begin_elf(elf, DWARF_C_READ, nullptr));
  }

  // Without .debug_aranges dwarf_addrdie finds nothing: scan the CUs.
  bool FindCu(uint64_t address, Dwarf_Die* cu) const {
    Dwarf_Off offset = 0, next = 0;
    size_t header_size = 0;
    while (dwarf_nextcu(dwarf_.get(), offset, &next, &header_size, nullptr, nullptr, nullptr) ==
           0) {
      if (dwarf_offdie(dwarf_.get(), offset + header_size, cu) && dwarf_haspc(cu, address) > 0)
        return true;
      offset = next;
    }
    return false;
  }

 public:
  // See Symbolizer::LeafReturnAddressLive; address is link-time.
  bool LeafReturnAddressLive(uint64_t address) {
    Elf* elf = file_.elf.get();
    if (!cfi_loaded_) {
      cfi_loaded_ = true;
      cfi_.reset(dwarf_getcfi_elf(elf));
    }
    GElf_Ehdr eh;
    if (!cfi_ || !gelf_getehdr(elf, &eh)) return false;
    Dwarf_Frame* raw = nullptr;
    if (dwarf_cfi_addrframe(cfi_.get(), address, &raw) != 0) return false;
    std::unique_ptr<Dwarf_Frame, decltype(&std::free)> frame(raw, &std::free);
    if (eh.e_machine == EM_X86_64) {
      Dwarf_Op* ops = nullptr;
      size_t nops = 0;
      if (dwarf_frame_cfa(frame.get(), &ops, &nops) != 0 || nops != 1) return false;
      // rsp + 8: libdw gives a register rule as DW_OP_bregx (reg, offset).
      const Dwarf_Op& op = ops[0];
      return (op.atom == DW_OP_bregx && op.number == 7 && op.number2 == 8) ||
             (op.atom == DW_OP_breg7 && op.number == 8);
    }
    if (eh.e_machine == EM_AARCH64) {
      Dwarf_Op mem[3];
      Dwarf_Op* ops = mem;
      size_t nops = 0;
      // x30 not saved by this frame (yet): it still holds the return address.
      return dwarf_frame_register(frame.get(), 30, mem, &ops, &nops) == 0 && nops == 0 &&
             ops == nullptr;
    }
    return false;
  }

 private:
  struct CfiDeleter {
    void operator()(Dwarf_CFI* cfi) const { dwarf_cfi_end(cfi); }
  };

  // Declaration order is destruction order reversed: DWARF before its ELF.
  OpenedElf file_;
  OpenedElf debug_file_;
  ScopedDwarf dwarf_;
  std::vector<GElf_Phdr> loads_;
  std::vector<Function> functions_;
  std::string build_id_;
  bool cfi_loaded_ = false;
  std::unique_ptr<Dwarf_CFI, CfiDeleter> cfi_;  // .eh_frame of file_, ended before it
};

const char* SpaceKindName(SpaceKind kind) {
  switch (kind) {
    case SpaceKind::kKernel:
      return "kernel";
    case SpaceKind::kModule:
      return "module";
    case SpaceKind::kMainExecutable:
      return "main";
    case SpaceKind::kSharedLibrary:
      return "shared";
    case SpaceKind::kJit:
      return "jit";
    case SpaceKind::kUnresolved:
      break;
  }
  return "unresolved";
}

std::string Location::SpaceName() const {
  if (kind == SpaceKind::kModule) return "module:" + object;
  if (kind == SpaceKind::kSharedLibrary) return "shared:" + object;
  return SpaceKindName(kind);
}

std::string Location::FunctionName() const {
  if (!symbol.empty()) return symbol;
  if (!object.empty()) return "[unknown] " + BaseName(object);
  return "[unknown] " + Hex(address);
}

Symbolizer::Symbolizer(const Profile& profile, SymbolizerOptions options)
    : profile_(profile), options_(std::move(options)) {
  elf_version(EV_CURRENT);
}

Symbolizer::~Symbolizer() = default;

const Location& Symbolizer::Resolve(uint32_t pid, uint64_t space_id, uint64_t ip, bool user) {
  auto key = std::make_tuple(user ? pid : 0, user ? space_id : 0, ip, user);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  Location loc = user ? ResolveUser(pid, space_id, ip) : ResolveKernel(ip);
  loc.address = ip;
  ++stats_.addresses;
  if (!loc.resolved()) ++stats_.unresolved;
  return cache_.emplace(key, std::move(loc)).first->second;
}

Location Symbolizer::ResolveKernel(uint64_t ip) const {
  Location loc;
  loc.kind = SpaceKind::kKernel;
  loc.object = "[kernel]";
  loc.offset = ip;
  const std::vector<KernelSymbol>& syms = profile_.kernel_symbols.symbols;
  if (ip == 0 || !profile_.kernel_symbols.available) return loc;  // hidden or no kallsyms
  auto it = std::upper_bound(syms.begin(), syms.end(), ip,
                             [](uint64_t a, const KernelSymbol& s) { return a < s.address; });
  if (it == syms.begin()) return loc;
  const KernelSymbol& sym = *std::prev(it);
  if (!sym.module.empty()) {
    loc.kind = SpaceKind::kModule;
    loc.object = sym.module;
  }
  loc.symbol = sym.name;
  loc.offset = ip - sym.address;
  return loc;
}

const std::vector<Mapping>* Symbolizer::MappingsOf(uint32_t pid, uint64_t space_id) const {
  auto it = profile_.mappings.find({pid, space_id});
  if (it != profile_.mappings.end()) return &it->second;
  for (const auto& [key, maps] : profile_.mappings)
    if (key.space_id == space_id && space_id != 0) return &maps;
  return nullptr;
}

std::string Symbolizer::MainExecutable(uint32_t pid, uint64_t space_id) const {
  const std::vector<Mapping>* maps = MappingsOf(pid, space_id);
  if (!maps) return "";
  const Mapping* lowest_file = nullptr;
  for (const Mapping& m : *maps) {  // sorted by start
    if (!IsFilePath(m.path)) continue;
    if (!LooksLikeSharedObject(m.path)) return m.path;
    if (!lowest_file) lowest_file = &m;
  }
  return lowest_file ? lowest_file->path : "";
}

Symbolizer::ElfObject* Symbolizer::OpenElf(const std::string& path) {
  auto it = elf_files_.find(path);
  if (it == elf_files_.end()) {
    auto obj = ElfObject::Open(path, options_);
    ++(obj ? stats_.elf_files : stats_.elf_failures);
    it = elf_files_.emplace(path, std::move(obj)).first;
  }
  return it->second.get();
}

const Mapping* Symbolizer::FindMapping(uint32_t pid, uint64_t space_id, uint64_t ip) const {
  const Mapping* mapping = nullptr;
  if (const std::vector<Mapping>* maps = MappingsOf(pid, space_id)) {
    for (const Mapping& m : *maps)
      if (ip >= m.start && ip < m.end) mapping = &m;
  }
  return mapping;
}

std::optional<MappingInfo> Symbolizer::MappingAt(uint32_t pid, uint64_t space_id, uint64_t ip,
                                                 bool user) {
  if (!user) {
    const std::vector<KernelSymbol>& syms = profile_.kernel_symbols.symbols;
    MappingInfo kernel;
    kernel.start = profile_.kernel_symbols.available && !syms.empty() ? syms.front().address : 0;
    kernel.limit = UINT64_MAX;
    kernel.file = kKernelMappingName;
    return kernel;
  }
  const Mapping* mapping = FindMapping(pid, space_id, ip);
  if (!mapping) return std::nullopt;
  MappingInfo info{mapping->start, mapping->end, mapping->pgoff, mapping->path, ""};
  if (IsFilePath(mapping->path))
    if (ElfObject* elf = OpenElf(mapping->path)) info.build_id = elf->build_id();
  return info;
}

bool Symbolizer::LeafReturnAddressLive(uint32_t pid, uint64_t space_id, uint64_t ip) {
  auto key = std::make_tuple(pid, space_id, ip);
  auto it = leaf_cache_.find(key);
  if (it != leaf_cache_.end()) return it->second;
  bool live = false;
  const Mapping* mapping = FindMapping(pid, space_id, ip);
  if (mapping && IsFilePath(mapping->path)) {
    ElfObject* elf = OpenElf(mapping->path);
    uint64_t address = 0;
    if (elf && elf->FileOffsetToAddress(ip - mapping->start + mapping->pgoff, &address))
      live = elf->LeafReturnAddressLive(address);
  }
  return leaf_cache_.emplace(key, live).first->second;
}

std::optional<Symbolizer::FileAddress> Symbolizer::FileAddressOf(uint32_t pid,
                                                                  uint64_t space_id, uint64_t ip) {
  const Mapping* mapping = FindMapping(pid, space_id, ip);
  if (!mapping || !IsFilePath(mapping->path)) return std::nullopt;
  ElfObject* elf = OpenElf(mapping->path);
  FileAddress out{mapping->path, 0};
  if (!elf || !elf->FileOffsetToAddress(ip - mapping->start + mapping->pgoff, &out.address))
    return std::nullopt;
  return out;
}

Location Symbolizer::ResolveUser(uint32_t pid, uint64_t space_id, uint64_t ip) {
  Location loc;
  loc.offset = ip;
  const Mapping* mapping = FindMapping(pid, space_id, ip);
  if (mapping && IsFilePath(mapping->path)) {
    loc.kind = mapping->path == MainExecutable(pid, space_id) ? SpaceKind::kMainExecutable
                                                              : SpaceKind::kSharedLibrary;
    loc.object = mapping->path;
    loc.offset = ip - mapping->start + mapping->pgoff;  // the file offset, until we know more
    ElfObject* elf = OpenElf(mapping->path);
    uint64_t address = 0;
    if (!elf || !elf->FileOffsetToAddress(loc.offset, &address)) return loc;
    loc.offset = address;
    if (const ElfObject::Function* fn = elf->FindFunction(address)) {
      loc.symbol = fn->name;
      loc.offset = address - fn->address;
    }
    if (options_.source_lines) elf->SourceLine(address, &loc.source_file, &loc.line);
    return loc;
  }
  auto jit = profile_.jit_symbols.find(pid);
  if (jit != profile_.jit_symbols.end()) {
    const std::vector<JitSymbol>& syms = jit->second;
    auto it = std::upper_bound(syms.begin(), syms.end(), ip,
                               [](uint64_t a, const JitSymbol& s) { return a < s.start; });
    if (it != syms.begin() && ip - std::prev(it)->start < std::prev(it)->size) {
      --it;
      loc.kind = SpaceKind::kJit;
      loc.object = "[jit]";
      loc.symbol = it->name;
      loc.offset = ip - it->start;
      return loc;
    }
  }
  if (mapping) {  // a pseudo file such as [vdso]: no ELF file to read
    loc.kind = SpaceKind::kSharedLibrary;
    loc.object = mapping->path.empty() ? "[anon]" : mapping->path;
    loc.offset = ip - mapping->start;
  }
  return loc;
}

}  // namespace tprof
