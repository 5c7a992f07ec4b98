#include "analysis/plt_stubs.h"

#include <elf.h>
#include <endian.h>
#include <gelf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <string_view>

namespace tprof {

namespace {

struct Section {
  Elf_Scn* scn = nullptr;
  GElf_Shdr shdr{};
};

std::optional<Section> FindSection(Elf* elf, const char* name) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return std::nullopt;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    const char* n = elf_strptr(elf, shstrndx, sh.sh_name);
    if (n && std::strcmp(n, name) == 0) return Section{scn, sh};
  }
  return std::nullopt;
}

// A section's bytes; empty for SHT_NOBITS (a debug file's copy).
std::string_view Bytes(const Section& s) {
  if (s.shdr.sh_type != SHT_PROGBITS) return {};
  Elf_Data* data = elf_rawdata(s.scn, nullptr);
  if (!data || !data->d_buf) return {};
  return {static_cast<const char*>(data->d_buf), data->d_size};
}

// What a relocation of a PLT or GOT slot binds there.
struct SlotRelocation {
  size_t index = 0;   // in its section
  uint64_t slot = 0;  // r_offset
  std::string symbol;
  uint64_t ifunc_resolver = 0;
};

bool IsIrelative(bool x86, uint32_t type) {
  return x86 ? type == R_X86_64_IRELATIVE : type == R_AARCH64_IRELATIVE;
}

// The relocations of a REL/RELA section that bind a function to a slot,
// in file order: with a symbol (its linked table's name) or an IFUNC
// resolver. plt_only: only the PLT's own kinds (jump slots and IFUNCs,
// not .rela.plt's TLS descriptors).
std::vector<SlotRelocation> ReadRelocations(Elf* elf, const Section& rel, bool x86,
                                            bool plt_only) {
  std::vector<SlotRelocation> out;
  const GElf_Shdr& sh = rel.shdr;
  if ((sh.sh_type != SHT_RELA && sh.sh_type != SHT_REL) || sh.sh_entsize == 0) return out;
  Elf_Data* data = elf_getdata(rel.scn, nullptr);
  if (!data) return out;
  // A static program's IFUNC relocations may link no symbol table.
  Elf_Scn* sym_scn = sh.sh_link ? elf_getscn(elf, sh.sh_link) : nullptr;
  GElf_Shdr sym_sh;
  Elf_Data* syms = sym_scn && gelf_getshdr(sym_scn, &sym_sh) && sym_sh.sh_type != SHT_NOBITS
                       ? elf_getdata(sym_scn, nullptr)
                       : nullptr;
  const uint32_t jump_slot = x86 ? R_X86_64_JUMP_SLOT : R_AARCH64_JUMP_SLOT;
  const size_t n = sh.sh_size / sh.sh_entsize;
  for (size_t i = 0; i < n; ++i) {
    GElf_Rela r{};
    if (sh.sh_type == SHT_RELA) {
      if (!gelf_getrela(data, static_cast<int>(i), &r)) break;
    } else {
      GElf_Rel rel_only;
      if (!gelf_getrel(data, static_cast<int>(i), &rel_only)) break;
      r.r_offset = rel_only.r_offset;
      r.r_info = rel_only.r_info;
    }
    const uint32_t type = static_cast<uint32_t>(GELF_R_TYPE(r.r_info));
    SlotRelocation s;
    s.index = i;
    s.slot = r.r_offset;
    if (IsIrelative(x86, type)) {
      s.ifunc_resolver = static_cast<uint64_t>(r.r_addend);
    } else if (plt_only && type != jump_slot) {
      continue;
    } else if (GELF_R_SYM(r.r_info) != 0 && syms) {
      GElf_Sym sym;
      const char* name = gelf_getsym(syms, static_cast<int>(GELF_R_SYM(r.r_info)), &sym)
                             ? elf_strptr(elf, sym_sh.sh_link, sym.st_name)
                             : nullptr;
      if (name) s.symbol = name;
    }
    if (!s.symbol.empty() || s.ifunc_resolver) out.push_back(std::move(s));
  }
  return out;
}

uint32_t Le32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return le32toh(v);
}

// What an x86-64 PLT entry does first, after an optional endbr64: jmp
// through its GOT slot (jmp *disp32(%rip), maybe bnd-prefixed) or, a lazy
// entry of an IBT PLT, push its .rela.plt index.
struct X86Entry {
  std::optional<uint64_t> slot;
  std::optional<uint32_t> index;
};

X86Entry DecodeX86(std::string_view code, uint64_t address) {
  static constexpr char kEndbr64[] = "\xf3\x0f\x1e\xfa";
  size_t i = code.substr(0, 4) == std::string_view(kEndbr64, 4) ? 4 : 0;
  X86Entry e;
  if (i + 5 <= code.size() && code[i] == '\x68') {
    e.index = Le32(code.data() + i + 1);
    return e;
  }
  if (i < code.size() && code[i] == '\xf2') ++i;
  if (i + 6 <= code.size() && code[i] == '\xff' && code[i + 1] == '\x25') {
    const int32_t disp = static_cast<int32_t>(Le32(code.data() + i + 2));
    e.slot = address + i + 6 + static_cast<uint64_t>(static_cast<int64_t>(disp));
  }
  return e;
}

class PltReader {
 public:
  PltReader(Elf* elf, bool x86) : x86_(x86) {
    std::optional<Section> rel = FindSection(elf, ".rela.plt");
    if (!rel) rel = FindSection(elf, ".rel.plt");
    if (rel) jumps_ = ReadRelocations(elf, *rel, x86, true);
    // Entry k of a PLT uses the k-th GOT slot; x86's IFUNC relocations
    // come last in .rela.plt whatever their slot (perf sorts them too).
    by_slot_.resize(jumps_.size());
    std::iota(by_slot_.begin(), by_slot_.end(), size_t{0});
    std::stable_sort(by_slot_.begin(), by_slot_.end(),
                     [this](size_t a, size_t b) { return jumps_[a].slot < jumps_[b].slot; });
    for (const SlotRelocation& r : jumps_) {
      slots_.emplace(r.slot, &r);
      indices_.emplace(r.index, &r);
    }
    if (x86) {
      if (auto dyn = FindSection(elf, ".rela.dyn")) eager_ = ReadRelocations(elf, *dyn, x86, false);
      for (const SlotRelocation& r : eager_) slots_.emplace(r.slot, &r);
    }
  }

  PltReader(const PltReader&) = delete;
  PltReader& operator=(const PltReader&) = delete;

  size_t jumps() const { return jumps_.size(); }

  // Entries of `entry` bytes after `header` bytes, as far as they fit;
  // by_position: an entry that says nothing (x86) or any entry (arm64) is
  // the relocation at its position in slot order.
  void Add(const Section& s, uint64_t header, uint64_t entry, bool by_position,
           std::vector<PltStub>* out) const {
    const std::string_view code = Bytes(s);
    if (code.empty() || entry == 0 || code.size() < header) return;
    if (header) {
      PltStub h;
      h.address = s.shdr.sh_addr;
      h.size = header;
      h.header = true;
      out->push_back(std::move(h));
    }
    for (uint64_t at = header, k = 0; at + entry <= code.size(); at += entry, ++k) {
      const uint64_t address = s.shdr.sh_addr + at;
      const SlotRelocation* r = nullptr;
      bool said = false;
      if (x86_) {
        const X86Entry e = DecodeX86(code.substr(at, entry), address);
        if (e.slot) {
          said = true;
          if (auto it = slots_.find(*e.slot); it != slots_.end()) r = it->second;
        } else if (e.index) {
          said = true;
          if (auto it = indices_.find(*e.index); it != indices_.end()) r = it->second;
        }
      }
      if (!said && by_position && k < by_slot_.size()) r = &jumps_[by_slot_[k]];
      if (!r) continue;
      PltStub stub;
      stub.address = address;
      stub.size = entry;
      stub.symbol = r->symbol;
      stub.ifunc_resolver = r->ifunc_resolver;
      out->push_back(std::move(stub));
    }
  }

 private:
  bool x86_;
  std::vector<SlotRelocation> jumps_;   // .rela.plt, file order
  std::vector<size_t> by_slot_;         // indices into jumps_ by r_offset
  std::vector<SlotRelocation> eager_;   // x86-64 .rela.dyn
  std::map<uint64_t, const SlotRelocation*> slots_;  // jumps_ first
  std::map<size_t, const SlotRelocation*> indices_;  // jumps_ by .rela.plt index
};

}  // namespace

std::vector<PltStub> ReadPltStubs(Elf* elf) {
  std::vector<PltStub> out;
  GElf_Ehdr eh;
  if (!elf || elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64 ||
      !gelf_getehdr(elf, &eh))
    return out;
  const bool x86 = eh.e_machine == EM_X86_64;
  if (!x86 && eh.e_machine != EM_AARCH64) return out;
  const std::optional<Section> plt = FindSection(elf, ".plt");
  const PltReader reader(elf, x86);
  if (x86) {
    if (plt) {
      // No header when the entries fill the section (a static program's
      // IFUNC-only PLT).
      const uint64_t header = reader.jumps() * 16 == plt->shdr.sh_size ? 0 : 16;
      reader.Add(*plt, header, 16, true, &out);
    }
    if (auto sec = FindSection(elf, ".plt.sec")) reader.Add(*sec, 0, 16, true, &out);
    if (auto got = FindSection(elf, ".plt.got")) {
      uint64_t entry = got->shdr.sh_entsize;
      if (entry != 8 && entry != 16) entry = got->shdr.sh_addralign == 8 ? 8 : 16;
      reader.Add(*got, 0, entry, false, &out);
    }
  } else if (plt) {
    uint64_t entry = 16;
    const uint64_t n = reader.jumps();
    if (n && plt->shdr.sh_size > 32 && (plt->shdr.sh_size - 32) % n == 0 &&
        (plt->shdr.sh_size - 32) / n == 24)
      entry = 24;  // BTI or PAC entries
    reader.Add(*plt, 32, entry, true, &out);
  }
  std::sort(out.begin(), out.end(),
            [](const PltStub& a, const PltStub& b) { return a.address < b.address; });
  return out;
}

const PltStub* FindPltStub(const std::vector<PltStub>& stubs, uint64_t address) {
  auto it = std::upper_bound(stubs.begin(), stubs.end(), address,
                             [](uint64_t a, const PltStub& s) { return a < s.address; });
  if (it == stubs.begin()) return nullptr;
  --it;
  return address - it->address < it->size ? &*it : nullptr;
}

}  // namespace tprof
