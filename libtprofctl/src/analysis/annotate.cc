#include "tprof/analysis/annotate.h"

#include <capstone/capstone.h>
#include <cxxabi.h>
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "tprof/analysis/archive.h"
#include "tprof/analysis/elf_snapshot.h"
#include "tprof/base/scoped_fd.h"

namespace tprof {

namespace {

struct ElfDeleter {
  void operator()(Elf* elf) const { elf_end(elf); }
};
struct DwarfDeleter {
  void operator()(Dwarf* dwarf) const { dwarf_end(dwarf); }
};

// An ELF file opened read-only; the Elf is ended before its descriptor.
struct ElfFile {
  ScopedFd fd;
  std::unique_ptr<Elf, ElfDeleter> elf;

  bool Open(const std::string& path, Elf_Cmd cmd = ELF_C_READ_MMAP) {
    fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return false;
    elf.reset(elf_begin(fd.get(), cmd, nullptr));
    return elf && elf_kind(elf.get()) == ELF_K_ELF;
  }
  uint16_t Machine() const {
    GElf_Ehdr eh;
    return elf && gelf_getehdr(elf.get(), &eh) ? eh.e_machine : EM_NONE;
  }
  // Bytes at link-time [address, address + size) through the PT_LOAD
  // segments (file-backed part only); false if not all are in the file.
  bool ReadAt(uint64_t address, uint64_t size, std::vector<uint8_t>* out) const {
    size_t n = 0;
    if (elf_getphdrnum(elf.get(), &n) != 0) return false;
    for (size_t i = 0; i < n; ++i) {
      GElf_Phdr ph;
      if (!gelf_getphdr(elf.get(), static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
      if (address < ph.p_vaddr || address - ph.p_vaddr >= ph.p_filesz) continue;
      if (address - ph.p_vaddr + size > ph.p_filesz) return false;
      out->resize(size);
      ssize_t got = ::pread(fd.get(), out->data(), size,
                            static_cast<off_t>(ph.p_offset + (address - ph.p_vaddr)));
      return got == static_cast<ssize_t>(size);
    }
    return false;
  }
  // The size of the function symbol at `address` (name empty; aliases:
  // the largest), or of the one named `name` (static functions share
  // names: the one whose size is closest to `near_size`); 0 if none.
  uint64_t FunctionSize(uint64_t address, const std::string& name, uint64_t* found_address,
                        uint64_t near_size = 0) const;
};

uint64_t ElfFile::FunctionSize(uint64_t address, const std::string& name,
                               uint64_t* found_address, uint64_t near_size) const {
  auto distance = [near_size](uint64_t v) { return v > near_size ? v - near_size : near_size - v; };
  bool found = false;
  uint64_t size = 0;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf.get(), scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
        sh.sh_entsize == 0)
      continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    for (size_t i = 0, count = sh.sh_size / sh.sh_entsize; i < count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
      int type = GELF_ST_TYPE(sym.st_info);
      if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF) continue;
      if (name.empty()) {
        if (sym.st_value != address) continue;
      } else {
        const char* s = elf_strptr(elf.get(), sh.sh_link, sym.st_name);
        if (!s || name != s) continue;
      }
      const bool better = name.empty() ? sym.st_size >= size
                                       : !found || distance(sym.st_size) < distance(size);
      if (better) {
        size = sym.st_size;
        found = true;
        if (found_address) *found_address = sym.st_value;
      }
    }
  }
  return size;
}

bool HasDebugInfo(Elf* elf) {
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


// DWARF lines of one object: from the file itself, or from the debug file
// the symbolizer found for it (Symbolizer::FileAddress::debug_file).
class LineTable {
 public:
  bool Open(const ElfFile& file, const std::string& debug_file) {
    Elf* elf = file.elf.get();
    if (!HasDebugInfo(elf)) {
      if (debug_file.empty() || !debug_.Open(debug_file) || !HasDebugInfo(debug_.elf.get()))
        return false;
      elf = debug_.elf.get();
    }
    dwarf_.reset(dwarf_begin_elf(elf, DWARF_C_READ, nullptr));
    return dwarf_ != nullptr;
  }
  // The source line of a link-time address.
  bool Line(uint64_t address, std::string* file, uint32_t* line) {
    if (!dwarf_) return false;
    if (!have_cu_ || dwarf_haspc(&cu_, address) <= 0) {
      have_cu_ = dwarf_addrdie(dwarf_.get(), address, &cu_) != nullptr || FindCu(address);
      if (!have_cu_) return false;
    }
    Dwarf_Line* l = dwarf_getsrc_die(&cu_, address);
    int lineno = 0;
    const char* src = l ? dwarf_linesrc(l, nullptr, nullptr) : nullptr;
    if (!src || dwarf_lineno(l, &lineno) != 0 || lineno <= 0) return false;
    *file = src;
    // A relative name is relative to the compilation directory.
    if (src[0] != '/') {
      Dwarf_Attribute attr;
      const char* dir = dwarf_formstring(dwarf_attr(&cu_, DW_AT_comp_dir, &attr));
      if (dir && dir[0] == '/') *file = std::string(dir) + "/" + src;
    }
    *line = static_cast<uint32_t>(lineno);
    return true;
  }

 private:
  // Without .debug_aranges dwarf_addrdie finds nothing: scan the CUs.
  bool FindCu(uint64_t address) {
    Dwarf_Off offset = 0, next = 0;
    size_t header_size = 0;
    while (dwarf_nextcu(dwarf_.get(), offset, &next, &header_size, nullptr, nullptr, nullptr) ==
           0) {
      if (dwarf_offdie(dwarf_.get(), offset + header_size, &cu_) && dwarf_haspc(&cu_, address) > 0)
        return true;
      offset = next;
    }
    return false;
  }

  ElfFile debug_;
  std::unique_ptr<Dwarf, DwarfDeleter> dwarf_;  // declared after its ELF: ended first
  Dwarf_Die cu_{};
  bool have_cu_ = false;
};

std::string Demangle(const std::string& name) {
  if (name.compare(0, 2, "_Z") != 0) return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string result = status == 0 && out ? out : name;
  std::free(out);
  return result;
}

// "ns::f(int)" -> "ns::f"; names without parameters unchanged.
std::string WithoutParameters(const std::string& name) {
  size_t paren = name.find('(');
  return paren == std::string::npos || paren == 0 ? name : name.substr(0, paren);
}

bool NameMatches(const std::string& have, const std::string& want,
                 const std::string& want_demangled) {
  return have == want || have == want_demangled || WithoutParameters(have) == want;
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string ErrnoText(int err) { return std::strerror(err); }

// One (process, object) that has the function.
struct Group {
  AnnotateCandidate candidate;
  Location location;  // of one of its addresses
  SampleKey key;      // that address's sample
  std::map<uint64_t, uint64_t> by_ip;
};

struct Code {
  std::vector<uint8_t> bytes;  // from the function's start
  uint16_t machine = EM_NONE;
  std::string source;          // where from
};

const char* ArchName(uint16_t machine) {
  return machine == EM_X86_64 ? "x86-64" : machine == EM_AARCH64 ? "arm64" : "";
}

uint16_t HostMachine() {
#if defined(__aarch64__)
  return EM_AARCH64;
#else
  return EM_X86_64;
#endif
}

// Disassembles code into instructions at start; bytes capstone cannot
// decode become one-unit ".byte" entries (padding, data in text).
std::vector<AnnotatedInstruction> Disassemble(const Code& code, uint64_t start,
                                              std::string* note) {
  std::vector<AnnotatedInstruction> out;
  csh handle = 0;
  const bool arm = code.machine == EM_AARCH64;
  if (code.machine != EM_X86_64 && !arm) {
    *note = "no disassembler for ELF machine " + std::to_string(code.machine);
    return out;
  }
  if (cs_open(arm ? CS_ARCH_ARM64 : CS_ARCH_X86, arm ? CS_MODE_ARM : CS_MODE_64, &handle) !=
      CS_ERR_OK) {
    *note = "capstone could not be opened";
    return out;
  }
  // AT&T on x86, as objdump and perf annotate print it.
  if (!arm) cs_option(handle, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
  cs_insn* insn = cs_malloc(handle);
  const uint8_t* p = code.bytes.data();
  size_t left = code.bytes.size();
  uint64_t address = start;
  while (left > 0) {
    const uint8_t* before = p;
    if (cs_disasm_iter(handle, &p, &left, &address, insn)) {
      AnnotatedInstruction ins;
      ins.address = insn->address;
      ins.offset = insn->address - start;
      ins.size = insn->size;
      ins.text = insn->mnemonic;
      if (insn->op_str[0]) ins.text += std::string(" ") + insn->op_str;
      out.push_back(std::move(ins));
      continue;
    }
    size_t unit = std::min<size_t>(arm ? 4 : 1, left);
    AnnotatedInstruction ins;
    ins.address = address;
    ins.offset = address - start;
    ins.size = static_cast<uint32_t>(unit);
    ins.text = ".byte";
    for (size_t i = 0; i < unit; ++i) ins.text += (i ? ", " : " ") + Hex(before[i]);
    out.push_back(std::move(ins));
    p = before + unit;
    left -= unit;
    address += unit;
  }
  cs_free(insn, 1);
  cs_close(&handle);
  return out;
}

// A kallsyms file's address of `name`: `want` if one of the symbols of
// that name is there (static functions share names), else the first one's
// (0 if absent or hidden).
uint64_t KallsymsAddress(const std::string& path, const std::string& name, uint64_t want) {
  std::ifstream in(path);
  std::string line;
  uint64_t first = 0;
  while (std::getline(in, line)) {
    size_t sp1 = line.find(' ');
    size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string::npos) continue;
    size_t end = line.find_first_of(" \t", sp2 + 1);
    if (line.compare(sp2 + 1, end == std::string::npos ? std::string::npos : end - sp2 - 1,
                     name) != 0)
      continue;
    uint64_t address = std::strtoull(line.substr(0, sp1).c_str(), nullptr, 16);
    if (address == want) return address;
    if (!first) first = address;
  }
  return first;
}

// The kernel's text as the running kernel has it, from /proc/kcore.
bool ReadKcore(const AnnotateOptions& o, const std::string& name, uint64_t start, uint64_t size,
               Code* code, std::string* note) {
  uint64_t now = KallsymsAddress(o.kallsyms_path, name, start);
  if (now == 0) {
    *note = "kernel code not disassembled: " + o.kallsyms_path + " does not give " + name +
            "'s address to this user (as root, " + o.kcore_path + " holds the kernel's text)";
    return false;
  }
  if (now != start) {
    *note = "kernel code not disassembled: " + name + " is at " + Hex(now) + " in the running "
            "kernel but was at " + Hex(start) + " when recorded (another boot or kernel)";
    return false;
  }
  // kcore is an ELF core file as large as the address space: its headers
  // are read by hand, and only the function's bytes after them.
  ScopedFd fd(::open(o.kcore_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    int err = errno;
    *note = "kernel code not disassembled: cannot read " + o.kcore_path + ": " + ErrnoText(err) +
            (err == EACCES || err == EPERM ? " (it needs root)" : "");
    return false;
  }
  Elf64_Ehdr eh;
  if (::pread(fd.get(), &eh, sizeof(eh), 0) != sizeof(eh) ||
      std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_phentsize != sizeof(Elf64_Phdr)) {
    *note = "kernel code not disassembled: " + o.kcore_path + " is not a 64-bit ELF core file";
    return false;
  }
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (::pread(fd.get(), &ph, sizeof(ph), static_cast<off_t>(eh.e_phoff + i * sizeof(ph))) !=
        sizeof(ph))
      break;
    if (ph.p_type != PT_LOAD || start < ph.p_vaddr || start - ph.p_vaddr + size > ph.p_filesz)
      continue;
    code->bytes.resize(size);
    if (::pread(fd.get(), code->bytes.data(), size,
                static_cast<off_t>(ph.p_offset + (start - ph.p_vaddr))) !=
        static_cast<ssize_t>(size)) {
      *note = "kernel code not disassembled: reading " + o.kcore_path + " failed: " +
              ErrnoText(errno);
      code->bytes.clear();
      return false;
    }
    code->machine = eh.e_machine;
    code->source = o.kcore_path;
    return true;
  }
  *note = "kernel code not disassembled: " + Hex(start) + " is not in " + o.kcore_path;
  return false;
}

void AddLines(Annotation* a, const std::map<std::pair<std::string, uint32_t>, uint64_t>& by_line,
              const std::map<std::string, std::pair<uint32_t, uint32_t>>& span, size_t context,
              const std::vector<std::string>& source_dirs) {
  if (span.empty()) return;
  // The main file: the one most of the function's lines are in (the
  // others are inlined headers), ties to the first instruction's.
  std::map<std::string, size_t> weight;
  for (const AnnotatedInstruction& ins : a->instructions)
    if (!ins.file.empty()) weight[ins.file] += std::max<uint32_t>(ins.size, 1);
  std::string main_file;
  size_t best = 0;
  for (const AnnotatedInstruction& ins : a->instructions)
    if (!ins.file.empty() && weight[ins.file] > best) best = weight[main_file = ins.file];
  std::vector<std::string> order = {main_file};
  for (const auto& [file, range] : span)
    if (file != main_file) order.push_back(file);
  for (const std::string& path : order) {
    AnnotatedFile f;
    f.path = path;
    auto [lo, hi] = span.at(path);
    const bool main = path == main_file;
    std::vector<uint32_t> numbers;
    if (main) {
      lo = lo > context ? lo - static_cast<uint32_t>(context) : 1;
      hi += static_cast<uint32_t>(context);
      for (uint32_t l = lo; l <= hi; ++l) numbers.push_back(l);
    } else {
      for (const auto& [key, n] : by_line)
        if (key.first == path && n) numbers.push_back(key.second);
      if (numbers.empty()) continue;  // inlined, but no samples there
    }
    std::vector<std::string> text;
    std::ifstream in(path);
    // Sources moved since the build (another machine, a guest): the same
    // file name in a directory the user gives.
    for (size_t d = 0; !in && d < source_dirs.size(); d++) {
      in.clear();
      in.open(source_dirs[d] + "/" + path.substr(path.rfind('/') + 1));
    }
    f.read = static_cast<bool>(in);
    for (std::string line; f.read && text.size() < numbers.back() && std::getline(in, line);)
      text.push_back(line);
    if (main && f.read && text.size() < hi) {  // the file ends before the window
      while (!numbers.empty() && numbers.back() > text.size() &&
             numbers.back() > span.at(path).second)
        numbers.pop_back();
    }
    if (!f.read) {
      // No text to show: only the lines the function's code is on.
      std::set<uint32_t> coded;
      for (const AnnotatedInstruction& ins : a->instructions)
        if (ins.file == path) coded.insert(ins.line);
      std::erase_if(numbers, [&coded](uint32_t l) { return !coded.count(l); });
    }
    for (uint32_t l : numbers) {
      AnnotatedLine line;
      line.line = l;
      auto it = by_line.find({path, l});
      line.samples = it == by_line.end() ? 0 : it->second;
      if (l <= text.size()) {
        line.has_text = true;
        line.text = text[l - 1];
      }
      f.lines.push_back(std::move(line));
    }
    if (!f.read && a->source_note.empty())
      a->source_note = "source file not found: " + path + " (line numbers only)";
    a->files.push_back(std::move(f));
  }
}

}  // namespace

Expected<Annotation> Annotate(const Profile& profile, Symbolizer& symbolizer,
                              const std::string& symbol, const AnnotateOptions& options) {
  const std::string demangled = Demangle(symbol);
  std::map<std::tuple<uint32_t, std::string, uint64_t>, Group> groups;
  for (const auto& [key, count] : profile.samples) {
    if (options.pid && key.pid != *options.pid) continue;
    const Location& loc = symbolizer.Resolve(key);
    if (!loc.resolved() || !NameMatches(loc.symbol, symbol, demangled)) continue;
    const bool kernel = loc.kind == SpaceKind::kKernel || loc.kind == SpaceKind::kModule;
    const uint32_t pid = kernel ? 0 : key.pid;
    const uint64_t start = key.ip - loc.offset;
    Group& g = groups[{pid, loc.object, start}];
    if (g.by_ip.empty()) {
      g.candidate.pid = pid;
      g.candidate.process = kernel ? "" : profile.ProcessDisplayName(pid);
      g.candidate.object = loc.object;
      g.location = loc;
      g.key = key;
    }
    g.candidate.samples += count;
    g.by_ip[key.ip] += count;
  }
  if (groups.empty())
    return Error::FromErrno(ENOENT, "no samples in function " + symbol +
                                        (options.pid ? " in pid " + std::to_string(*options.pid)
                                                     : std::string()));
  std::vector<const Group*> sorted;
  for (const auto& [k, g] : groups) sorted.push_back(&g);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Group* x, const Group* y) {
    return x->candidate.samples > y->candidate.samples;
  });
  const Group& g = *sorted.front();
  const Location& loc = g.location;

  Annotation a;
  for (const Group* c : sorted) a.candidates.push_back(c->candidate);
  a.function = loc.symbol;
  a.space = loc.SpaceName();
  a.object = loc.object;
  a.pid = g.candidate.pid;
  a.process = g.candidate.process;
  a.start = g.key.ip - loc.offset;
  a.samples = g.candidate.samples;

  Code code;
  std::string code_note;
  // The separate debug file of user code, as the symbolizer found it.
  std::string debug_file;
  // The recorded kernel's release (the recorder notes it), else the running one's.
  std::string release = options.kernel_release;
  if (auto it = profile.attributes.find("kernel_release");
      release.empty() && it != profile.attributes.end())
    release = it->second;
  if (release.empty()) {
    struct utsname u;
    if (::uname(&u) == 0) release = u.release;
  }
  std::unique_ptr<ElfFile> elf;  // the file the link-time addresses are of
  uint64_t link_start = 0;       // the function's start there
  if (loc.kind == SpaceKind::kMainExecutable || loc.kind == SpaceKind::kSharedLibrary) {
    auto fa = symbolizer.FileAddressOf(g.key.pid, g.key.space_id, g.key.ip);
    elf = std::make_unique<ElfFile>();
    if (!fa || !elf->Open(fa->path)) {
      code_note = "cannot read " + loc.object + ": " + ErrnoText(errno);
      elf.reset();
    } else {
      link_start = fa->address - loc.offset;
      debug_file = fa->debug_file;
      a.size = elf->FunctionSize(link_start, "", nullptr);
      // A stripped file's symbol came from its debug file, or from
      // MiniDebugInfo (which only libdwfl reads).
      if (ElfFile debug; a.size == 0 && !debug_file.empty() && debug.Open(debug_file))
        a.size = debug.FunctionSize(link_start, "", nullptr);
      if (a.size == 0) a.size = loc.symbol_size;
      code.machine = elf->Machine();
      code.source = fa->path;
    }
  } else if (loc.kind == SpaceKind::kKernel || loc.kind == SpaceKind::kModule) {
    // The extent: up to the next kallsyms symbol (the snapshot keeps the
    // one after each sampled symbol).
    const auto& syms = profile.kernel_symbols.symbols;
    auto next = std::upper_bound(syms.begin(), syms.end(), a.start,
                                 [](uint64_t v, const KernelSymbol& s) { return v < s.address; });
    if (next != syms.end()) a.size = next->address - a.start;
    // A vmlinux with debug info: DWARF lines, and its bytes, moved by KASLR.
    if (loc.kind == SpaceKind::kKernel) {
      for (const std::string& path :
           {options.debug_dir + "/boot/vmlinux-" + release,
            options.debug_dir + "/lib/modules/" + release + "/vmlinux"}) {
        auto f = std::make_unique<ElfFile>();
        uint64_t at = 0;
        if (!f->Open(path)) continue;
        uint64_t sym_size = f->FunctionSize(0, loc.symbol, &at, a.size);
        if (sym_size == 0 || at == 0) continue;
        if (a.size == 0 || sym_size < a.size) a.size = sym_size;
        link_start = at;
        elf = std::move(f);
        code.source = path;
        code.machine = elf->Machine();
        break;
      }
    }
    if (a.size > (1u << 20)) a.size = 1u << 20;  // a last symbol's next is far away
    if (a.size == 0) code_note = "the function's extent is unknown (no following kernel symbol)";
  } else if (loc.kind == SpaceKind::kJit) {
    if (auto jit = profile.jit_symbols.find(g.key.pid); jit != profile.jit_symbols.end())
      for (const JitSymbol& sym : jit->second)
        if (sym.start == a.start) a.size = sym.size;
    code_note = "JIT code: its bytes were in the process's anonymous memory, which the "
                "recording does not hold; sampled addresses only";
  } else {
    code_note = "no file holds this code (" + loc.object + "): sampled addresses only";
  }

  // The bytes.
  if (a.size == 0 && code_note.empty()) code_note = "the function's size is unknown";
  if (a.size > 0 && code_note.empty()) {
    bool ok = elf && elf->ReadAt(link_start, a.size, &code.bytes);
    if (!ok && (loc.kind == SpaceKind::kKernel || loc.kind == SpaceKind::kModule)) {
      std::string from_file = code.source;
      ok = ReadKcore(options, loc.symbol, a.start, a.size, &code, &code_note);
      if (ok && !from_file.empty()) code.source = from_file + " (lines), " + code.source;
      if (!ok && elf) code_note += "; " + from_file + " has no bytes at " + Hex(link_start);
    } else if (!ok) {
      code_note = "cannot read " + Hex(a.size) + " bytes at " + Hex(link_start) + " from " +
                  code.source;
    }
    if (!ok) code.bytes.clear();
  }
  a.arch = ArchName(code.machine ? code.machine : HostMachine());
  a.code_source = code.bytes.empty() ? "" : code.source;
  if (!code.bytes.empty()) a.instructions = Disassemble(code, a.start, &code_note);
  a.disassembly_note = code_note;

  // Samples onto instructions; addresses no instruction covers get their own
  // row (no disassembly, or a sample outside the known extent).
  for (const auto& [ip, n] : g.by_ip) {
    auto it = std::upper_bound(
        a.instructions.begin(), a.instructions.end(), ip,
        [](uint64_t v, const AnnotatedInstruction& ins) { return v < ins.address; });
    if (it != a.instructions.begin() && ip < std::prev(it)->address + std::prev(it)->size &&
        std::prev(it)->size) {
      std::prev(it)->samples += n;
      continue;
    }
    AnnotatedInstruction ins;
    ins.address = ip;
    ins.offset = ip - a.start;
    ins.samples = n;
    a.instructions.insert(it, std::move(ins));
  }

  // Source lines.
  LineTable lines;
  if (!elf) {
    if (loc.kind == SpaceKind::kKernel)
      a.source_note = "no vmlinux with debug info (" + options.debug_dir + "/boot/vmlinux-" +
                      release + ", linux-image-*-dbg): no source lines";
    else if (loc.kind == SpaceKind::kModule)
      a.source_note = "module code: no source lines";
    else
      a.source_note = "no source lines";
  } else if (!lines.Open(*elf, debug_file)) {
    a.source_note = code.source + " has no DWARF line information (build with -g)";
  } else {
    std::map<std::pair<std::string, uint32_t>, uint64_t> by_line;
    std::map<std::string, std::pair<uint32_t, uint32_t>> span;
    for (AnnotatedInstruction& ins : a.instructions) {
      if (!lines.Line(link_start + ins.offset, &ins.file, &ins.line)) continue;
      by_line[{ins.file, ins.line}] += ins.samples;
      auto [it, fresh] = span.try_emplace(ins.file, ins.line, ins.line);
      if (!fresh) {
        it->second.first = std::min(it->second.first, ins.line);
        it->second.second = std::max(it->second.second, ins.line);
      }
    }
    if (span.empty()) a.source_note = "no DWARF lines for this function";
    AddLines(&a, by_line, span, options.context_lines, options.source_dirs);
  }
  return a;
}

}  // namespace tprof
