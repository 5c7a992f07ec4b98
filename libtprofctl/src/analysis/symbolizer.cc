#include "tprof/analysis/symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "tprof/analysis/archive.h"
#include "tprof/analysis/elf_snapshot.h"
#include "analysis/plt_stubs.h"
#include "tprof/base/scoped_fd.h"
#include "base/text_format.h"

namespace tprof {

namespace {

constexpr char kVdsoName[] = "[vdso]";

struct ElfDeleter {
  void operator()(Elf* elf) const { elf_end(elf); }
};
using ScopedElf = std::unique_ptr<Elf, ElfDeleter>;

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

using text::BaseName;

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

// An ELF file read-only with its descriptor; both are owned.
struct OpenedElf {
  ScopedFd fd;
  ScopedElf elf;
};



}  // namespace

// One ELF file: its loadable segments (libelf) and, through libdwfl, its
// functions and source lines. libdwfl finds what the file itself lacks the
// way gdb and perf do: a separate debug file by build id
// (<debug_dir>/.build-id/xx/yyyy.debug) or by .gnu_debuglink (next to the
// file, in its .debug/ or under <debug_dir>), the MiniDebugInfo symbol table
// (.gnu_debugdata, Fedora's), and debuginfod when DEBUGINFOD_URLS is set
// (libdw loads libdebuginfod itself; unset, nothing is contacted). The
// module is reported at its link-time addresses (bias 0), so one Dwfl per
// file serves every process that maps it.
class Symbolizer::ElfObject {
 public:
  // libdwfl's absolute debug directories: an archive first.
  static std::string DebugPath(const SymbolizerOptions& options) {
    return options.symfs.empty() ? options.debug_dir : options.symfs + ":" + options.debug_dir;
  }

  struct Function {
    uint64_t address;
    uint64_t size;  // the symbol's, 0 if unknown
    std::string name;
  };

  static std::unique_ptr<ElfObject> Open(const std::string& path,
                                         const SymbolizerOptions& options) {
    return FromFd(path, ScopedFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)), options);
  }

  // An image in memory (the vDSO the profile carries), through a memfd:
  // libdwfl reads modules from descriptors.
  static std::unique_ptr<ElfObject> FromImage(const std::string& name, const std::string& image,
                                              const SymbolizerOptions& options) {
    ScopedFd fd(::memfd_create("tprof-elf-image", MFD_CLOEXEC));
    if (!fd) return nullptr;
    for (size_t done = 0; done < image.size();) {
      ssize_t n = ::write(fd.get(), image.data() + done, image.size() - done);
      if (n <= 0) return nullptr;
      done += static_cast<size_t>(n);
    }
    return FromFd(name, std::move(fd), options);
  }

  static std::unique_ptr<ElfObject> FromFd(const std::string& path, ScopedFd fd,
                                           const SymbolizerOptions& options) {
    auto obj = std::unique_ptr<ElfObject>(new ElfObject());
    if (!fd) return nullptr;
    obj->file_.fd = std::move(fd);
    obj->file_.elf.reset(elf_begin(obj->file_.fd.get(), ELF_C_READ_MMAP, nullptr));
    if (!obj->file_.elf || elf_kind(obj->file_.elf.get()) != ELF_K_ELF) return nullptr;
    Elf* elf = obj->file_.elf.get();
    size_t nphdr = 0;
    if (elf_getphdrnum(elf, &nphdr) != 0) return nullptr;
    for (size_t i = 0; i < nphdr; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD)
        obj->loads_.push_back(ph);
    }
    obj->build_id_ = ElfBuildId(elf);
    obj->source_lines_ = options.source_lines;
    obj->OpenDwfl(path, obj->file_.fd.get(), DebugPath(options));
    return obj;
  }

  // Takes functions and lines from this debug file instead (the file on
  // disk was rebuilt after the recording; the debug file matches the
  // recorded build id). The segments stay the file's: a debug file's
  // program headers keep the addresses but not the file offsets.
  bool UseDebugFile(const std::string& debug_path, const std::string& debug_dir) {
    ScopedFd fd(::open(debug_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return false;
    module_ = nullptr;
    dwfl_.reset();
    debug_file_.clear();
    answers_.clear();
    answer_bounds_.reset();
    OpenDwfl(debug_path, fd.get(), debug_dir);
    if (!module_) return false;
    debug_file_ = debug_path;
    recorded_debug_file_ = true;
    return true;
  }

  // The separate file libdwfl takes this file's symbols and lines from
  // (see the class comment; for a rebuilt file the recorded build's debug
  // file), "" when the file has its own or none was found. Looks it up
  // now if no symbol or line has been asked for yet.
  const std::string& DebugFile() {
    if (module_ && !recorded_debug_file_) {
      Dwarf_Addr bias = 0;
      dwfl_module_getsymtab(module_);
      dwfl_module_getdwarf(module_, &bias);
    }
    return debug_file_;
  }

  // An inlined instance's name, from its abstract origin: the linkage name
  // demangled (C++ with its parameters), else DW_AT_name.
  static std::string DieName(Dwarf_Die* die) {
    Dwarf_Attribute attr;
    const char* name = nullptr;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr))
      name = dwarf_formstring(&attr);
    if (!name && dwarf_attr_integrate(die, DW_AT_name, &attr)) name = dwarf_formstring(&attr);
    return name ? Demangle(name) : "[inlined]";
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

  // The function containing address (link-time): a PLT stub, "puts@plt"
  // (no symbol table has those; plt_stubs.h), else libdwfl's choice among
  // .symtab (the file's, its debug file's or MiniDebugInfo's) and .dynsym:
  // a sized symbol that covers it, else the nearest preceding sizeless one
  // in its section.
  // libdwfl's lookup scans the whole symbol table (perf-style
  // self-profiling of `top` found it at 30% of a CPU, and more in
  // libraries with only .dynsym, where every address of an unnamed
  // internal function was a new scan). Its choice depends only on which
  // symbols start at or below the address, which of them end above it and
  // which section holds it, so it is the same between two consecutive
  // symbol or section bounds: each such interval is looked up once per
  // file, for every process and every refresh of a live view.
  std::optional<Function> FindFunction(uint64_t address) {
    if (const PltStub* stub = FindPltStub(PltStubs(), address))
      return Function{stub->address, stub->size, PltName(*stub)};
    const std::vector<uint64_t>& bounds = AnswerBounds();
    auto next = std::upper_bound(bounds.begin(), bounds.end(), address);
    const uint64_t interval = next == bounds.begin() ? 0 : *std::prev(next);
    auto known = answers_.find(interval);
    if (known != answers_.end()) return known->second;
    return answers_.emplace(interval, FindSymbol(address)).first->second;
  }

  // Where libdwfl's answer may change (see FindFunction): every symbol's
  // start and end, and every section's, sorted, from the first call.
  const std::vector<uint64_t>& AnswerBounds() {
    if (!answer_bounds_) {
      std::vector<uint64_t>& bounds = answer_bounds_.emplace();
      const int n = module_ ? dwfl_module_getsymtab(module_) : 0;
      for (int i = 1; i < n; ++i) {
        GElf_Sym sym;
        GElf_Addr value = 0;
        GElf_Word shndx = 0;
        if (!dwfl_module_getsym_info(module_, i, &sym, &value, &shndx, nullptr, nullptr)) continue;
        bounds.push_back(value);
        bounds.push_back(value + sym.st_size);
      }
      GElf_Addr bias = 0;
      if (Elf* elf = module_ ? dwfl_module_getelf(module_, &bias) : nullptr) {
        for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
          GElf_Shdr shdr;
          if (!gelf_getshdr(scn, &shdr)) continue;
          bounds.push_back(shdr.sh_addr + bias);
          bounds.push_back(shdr.sh_addr + shdr.sh_size + bias);
        }
      }
      std::sort(bounds.begin(), bounds.end());
      bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    }
    return *answer_bounds_;
  }

  // The symbol table's function containing address (see FindFunction).
  std::optional<Function> FindSymbol(uint64_t address) const {
    if (!module_) return std::nullopt;
    GElf_Off offset = 0;
    GElf_Sym sym;
    const char* name = dwfl_module_addrinfo(module_, address, &offset, &sym, nullptr, nullptr,
                                            nullptr);
    if (!name || !*name) return std::nullopt;
    return Function{address - offset, sym.st_size, Demangle(name)};
  }

  // The file's PLT stubs, read at the first lookup; none for a file
  // rebuilt since the recording (its PLT is not the recorded one's).
  const std::vector<PltStub>& PltStubs() {
    if (!plt_) plt_ = recorded_debug_file_ ? std::vector<PltStub>() : ReadPltStubs(file_.elf.get());
    return *plt_;
  }

  // As perf and objdump name them: "puts@plt", an IFUNC's by its resolver's
  // symbol (objdump's "*ABS*+0x9d3a0@plt" without one), the header ".plt".
  std::string PltName(const PltStub& stub) const {
    if (stub.header) return ".plt";
    if (!stub.symbol.empty()) return Demangle(stub.symbol.c_str()) + "@plt";
    std::optional<Function> resolver = FindSymbol(stub.ifunc_resolver);
    // Without a .symtab version ("memcpy@@GLIBC_2.14"): the name callers use.
    if (resolver && resolver->address == stub.ifunc_resolver)
      return resolver->name.substr(0, resolver->name.find('@')) + "@plt";
    return "*ABS*+" + Hex(stub.ifunc_resolver) + "@plt";
  }

  const std::string& build_id() const { return build_id_; }

  // The functions inlined at address (link-time), innermost first, and
  // where each is called: the DW_TAG_inlined_subroutine scopes DWARF gives
  // for it, with their DW_AT_call_file and DW_AT_call_line.
  void InlinedAt(uint64_t address, std::vector<std::string>* names,
                 std::vector<Location::CallSite>* calls) const {
    if (!module_) return;
    Dwarf_Addr bias = 0;
    Dwarf_Die* cu = dwfl_module_addrdie(module_, address, &bias);
    if (!cu) return;
    Dwarf_Files* files = nullptr;
    size_t nfiles = 0;
    if (dwarf_getsrcfiles(cu, &files, &nfiles) != 0) files = nullptr;
    Dwarf_Die* scopes = nullptr;
    int n = dwarf_getscopes(cu, address - bias, &scopes);
    for (int i = 0; i < n; ++i) {
      if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
      names->push_back(DieName(&scopes[i]));
      Location::CallSite call;
      Dwarf_Attribute attr;
      Dwarf_Word value = 0;
      if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &value) == 0)
        call.line = static_cast<uint32_t>(value);
      const char* file = nullptr;
      if (files && dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attr), &value) == 0)
        file = dwarf_filesrc(files, value, nullptr, nullptr);
      if (file) call.file = file;
      calls->push_back(std::move(call));
    }
    std::free(scopes);
  }

  bool SourceLine(uint64_t address, std::string* file, uint32_t* line) const {
    if (!module_ || !source_lines_) return false;
    Dwfl_Line* l = dwfl_module_getsrc(module_, address);
    int lineno = 0;
    const char* src = l ? dwfl_lineinfo(l, nullptr, &lineno, nullptr, nullptr, nullptr) : nullptr;
    if (!src || lineno <= 0) return false;
    *file = src;
    *line = static_cast<uint32_t>(lineno);
    return true;
  }

 private:
  ElfObject() = default;

  void OpenDwfl(const std::string& path, int file_fd, const std::string& debug_dir) {
    // "" and ".debug": .gnu_debuglink next to the file and in its .debug/;
    // the absolute entry: <dir>/<file's dir>/<debuglink> and <dir>/.build-id/.
    debuginfo_path_ = ":.debug:" + debug_dir;
    debuginfo_path_ptr_ = debuginfo_path_.data();
    callbacks_.find_elf = dwfl_build_id_find_elf;
    callbacks_.find_debuginfo = FindDebuginfo;
    callbacks_.section_address = dwfl_offline_section_address;
    callbacks_.debuginfo_path = &debuginfo_path_ptr_;
    dwfl_.reset(dwfl_begin(&callbacks_));
    if (!dwfl_) return;
    dwfl_report_begin(dwfl_.get());
    // libdwfl owns (and closes) the descriptor it is given.
    int fd = ::fcntl(file_fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return;
    module_ = dwfl_report_elf(dwfl_.get(), BaseName(path).c_str(), path.c_str(), fd, 0, true);
    if (!module_) ::close(fd);
    dwfl_report_end(dwfl_.get(), nullptr, nullptr);
    void** userdata = nullptr;
    if (module_ && dwfl_module_info(module_, &userdata, nullptr, nullptr, nullptr, nullptr,
                                    nullptr, nullptr))
      *userdata = this;
  }

  // libdwfl's standard search, noting what it found: the debug file has
  // the file's build id (a .gnu_debugaltlink file, also looked up here, has
  // its own). debuginfod's file has no name from libdwfl: its descriptor's,
  // in the client's cache.
  static int FindDebuginfo(Dwfl_Module* mod, void** userdata, const char* modname,
                           Dwarf_Addr base, const char* file_name, const char* debuglink_file,
                           GElf_Word debuglink_crc, char** debuginfo_file_name) {
    int fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
                                          debuglink_file, debuglink_crc, debuginfo_file_name);
    auto* self = static_cast<ElfObject*>(*userdata);
    if (fd < 0 || !self || !self->debug_file_.empty()) return fd;
    if (!self->build_id_.empty()) {
      ScopedElf found(elf_begin(fd, ELF_C_READ_MMAP, nullptr));
      if (!found || ElfBuildId(found.get()) != self->build_id_) return fd;
    }
    if (*debuginfo_file_name && **debuginfo_file_name) {
      self->debug_file_ = *debuginfo_file_name;
    } else {
      std::error_code ec;
      self->debug_file_ =
          std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd), ec).string();
    }
    return fd;
  }

  struct DwflDeleter {
    void operator()(Dwfl* dwfl) const { dwfl_end(dwfl); }
  };

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

  // Declaration order is destruction order reversed: CFI before its ELF.
  OpenedElf file_;
  std::vector<GElf_Phdr> loads_;
  std::string build_id_;
  bool source_lines_ = true;
  std::string debuginfo_path_;
  char* debuginfo_path_ptr_ = nullptr;
  Dwfl_Callbacks callbacks_{};             // libdwfl keeps a pointer to it
  std::unique_ptr<Dwfl, DwflDeleter> dwfl_;
  Dwfl_Module* module_ = nullptr;          // owned by dwfl_
  std::string debug_file_;                 // see DebugFile()
  bool recorded_debug_file_ = false;       // UseDebugFile() chose it
  std::optional<std::vector<PltStub>> plt_;  // see PltStubs()
  // FindFunction()'s answers, by the start of the interval between two
  // of AnswerBounds() that holds the address.
  std::unordered_map<uint64_t, std::optional<Function>> answers_;
  std::optional<std::vector<uint64_t>> answer_bounds_;  // see AnswerBounds()
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

std::vector<std::string> Location::FrameNames() const {
  std::vector<std::string> names;
  for (const std::string& fn : inlined) names.push_back(fn + " (inlined)");
  names.push_back(FunctionName());
  return names;
}

std::string Location::SpaceName() const {
  if (kind == SpaceKind::kModule) return "module:" + object;
  if (kind == SpaceKind::kSharedLibrary) return "shared:" + object;
  return SpaceKindName(kind);
}

std::string ShortSpaceName(const std::string& space_name) {
  static constexpr std::string_view kShared = "shared:";
  if (!space_name.starts_with(kShared)) return space_name;
  const size_t slash = space_name.rfind('/');
  return slash == std::string::npos ? space_name
                                    : std::string(kShared) + space_name.substr(slash + 1);
}

std::string Location::ShortSpaceName() const { return tprof::ShortSpaceName(SpaceName()); }

std::string Location::FunctionName() const {
  if (!symbol.empty()) return symbol;
  // An unnamed user address keeps its own row ("libc.so.6+0x1a2b"): merged
  // per object, a hot stripped function would hide among the file's others.
  if (kind == SpaceKind::kMainExecutable || kind == SpaceKind::kSharedLibrary)
    return BaseName(object) + "+" + Hex(offset);
  if (!object.empty()) return "[unknown] " + BaseName(object);
  return "[unknown] " + Hex(address);
}

Symbolizer::Symbolizer(const Profile& profile, SymbolizerOptions options)
    : profile_(profile), options_(std::move(options)) {
  elf_version(EV_CURRENT);
  // libdwfl searches only absolute debug directories.
  std::error_code ec;
  if (!options_.symfs.empty()) options_.symfs = std::filesystem::absolute(options_.symfs, ec).string();
}

Symbolizer::~Symbolizer() = default;

void Symbolizer::ForgetAddresses() {
  cache_.clear();
  leaf_cache_.clear();
}

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

bool Symbolizer::HasElf(const Mapping& mapping) const {
  return IsFilePath(mapping.path) || (mapping.path == kVdsoName && !profile_.vdso_image.empty());
}

Symbolizer::ElfObject* Symbolizer::OpenElf(const std::string& path) {
  auto it = elf_files_.find(path);
  if (it == elf_files_.end()) {
    auto obj = path == kVdsoName ? ElfObject::FromImage(path, profile_.vdso_image, options_)
                                 : ElfObject::Open(FileToRead(path), options_);
    // Rebuilt since the recording: the debug file of the recorded build.
    auto recorded = profile_.build_ids.find(path);
    if (obj && recorded != profile_.build_ids.end() && recorded->second.size() > 2 &&
        recorded->second != obj->build_id()) {
      const std::string& id = recorded->second;
      const std::string debug_path = ElfObject::DebugPath(options_);
      if (options_.symfs.empty() ||
          !obj->UseDebugFile(SymfsPath(options_.symfs, id, true), debug_path))
        obj->UseDebugFile(SymfsPath(options_.debug_dir, id, true), debug_path);
    }
    ++(obj ? stats_.elf_files : stats_.elf_failures);
    it = elf_files_.emplace(path, std::move(obj)).first;
  }
  return it->second.get();
}

std::string Symbolizer::FileToRead(const std::string& path) const {
  if (options_.symfs.empty()) return path;
  auto recorded = profile_.build_ids.find(path);
  if (recorded == profile_.build_ids.end()) return path;
  std::string archived = SymfsPath(options_.symfs, recorded->second);
  return !archived.empty() && ::access(archived.c_str(), R_OK) == 0 ? archived : path;
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
  if (HasElf(*mapping))
    if (ElfObject* elf = OpenElf(mapping->path)) info.build_id = elf->build_id();
  return info;
}

bool Symbolizer::LeafReturnAddressLive(uint32_t pid, uint64_t space_id, uint64_t ip) {
  auto key = std::make_tuple(pid, space_id, ip);
  auto it = leaf_cache_.find(key);
  if (it != leaf_cache_.end()) return it->second;
  bool live = false;
  const Mapping* mapping = FindMapping(pid, space_id, ip);
  if (mapping && HasElf(*mapping)) {
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
  FileAddress out{FileToRead(mapping->path), 0, ""};
  if (!elf || !elf->FileOffsetToAddress(ip - mapping->start + mapping->pgoff, &out.address))
    return std::nullopt;
  out.debug_file = elf->DebugFile();
  return out;
}

Location Symbolizer::ResolveUser(uint32_t pid, uint64_t space_id, uint64_t ip) {
  Location loc;
  loc.offset = ip;
  const Mapping* mapping = FindMapping(pid, space_id, ip);
  if (mapping && HasElf(*mapping)) {
    loc.kind = mapping->path == MainExecutable(pid, space_id) ? SpaceKind::kMainExecutable
                                                              : SpaceKind::kSharedLibrary;
    loc.object = mapping->path;
    loc.offset = ip - mapping->start + mapping->pgoff;  // the file offset, until we know more
    ElfObject* elf = OpenElf(mapping->path);
    uint64_t address = 0;
    if (!elf || !elf->FileOffsetToAddress(loc.offset, &address)) return loc;
    loc.offset = address;
    if (std::optional<ElfObject::Function> fn = elf->FindFunction(address)) {
      loc.symbol = std::move(fn->name);
      loc.offset = address - fn->address;
      loc.symbol_size = fn->size;
    }
    elf->SourceLine(address, &loc.source_file, &loc.line);
    if (options_.source_lines) elf->InlinedAt(address, &loc.inlined, &loc.inlined_calls);
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
