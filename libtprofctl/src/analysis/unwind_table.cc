#include "tprof/analysis/unwind_table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>

#include <sys/auxv.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "tprof/base/scoped_fd.h"

namespace tprof {
namespace {

// DWARF register numbers of the machine's stack pointer, frame pointer and
// return-address column.
struct MachineRegs {
  int sp, fp, ra;
  bool link_register;  // the return address starts in a register (arm64's x30)
};

struct FrameDeleter {
  void operator()(Dwarf_Frame* f) const { std::free(f); }
};
using FramePtr = std::unique_ptr<Dwarf_Frame, FrameDeleter>;

struct CfiDeleter {
  void operator()(Dwarf_CFI* c) const { dwarf_cfi_end(c); }
};
struct DwarfDeleter {
  void operator()(Dwarf* d) const { dwarf_end(d); }
};

// The x86-64 lazy-binding PLT's CFA expression (binutils' and lld's):
// rsp + 8 + ((rip & 15) >= 11 ? 8 : 0).
bool IsPltExpression(const Dwarf_Op* ops, size_t n) {
  static const uint8_t kAtoms[] = {DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, DW_OP_lit11,
                                   DW_OP_ge,    DW_OP_lit3,   DW_OP_shl,   DW_OP_plus};
  if (n != sizeof(kAtoms)) return false;
  for (size_t i = 0; i < n; i++)
    if (ops[i].atom != kAtoms[i]) return false;
  return ops[1].number == 0;
}

// Where the caller's value of a register is: 0 same value, 1 at CFA + *off,
// 2 undefined, -1 anything else (another register, an expression).
int RegisterRule(Dwarf_Frame* f, int reg, int64_t* off) {
  Dwarf_Op mem[3];
  Dwarf_Op* ops = nullptr;
  size_t n = 0;
  if (dwarf_frame_register(f, reg, mem, &ops, &n) != 0) return -1;
  if (n == 0) return ops == nullptr ? 0 : 2;
  if (ops[0].atom != DW_OP_call_frame_cfa) return -1;
  if (n == 1) {
    *off = 0;
    return 1;
  }
  if (n == 2 && ops[1].atom == DW_OP_plus_uconst) {
    *off = static_cast<int64_t>(ops[1].number);  // a negative offset, as two's complement
    return 1;
  }
  return -1;
}

bool FitsS16(int64_t v) {
  return v >= std::numeric_limits<int16_t>::min() && v <= std::numeric_limits<int16_t>::max();
}

// A register's offset from sp when ops is `DW_OP_breg<sp> N` (a location
// in the frame at sp, as signal frames' expressions say).
bool SpOffset(const Dwarf_Op* ops, size_t n, const MachineRegs& m, int64_t* off) {
  if (n != 1) return false;
  if (ops[0].atom == DW_OP_breg0 + m.sp && m.sp < 32) {
    *off = static_cast<int64_t>(ops[0].number);
    return true;
  }
  if (ops[0].atom == DW_OP_bregx && ops[0].number == Dwarf_Word(m.sp)) {
    *off = static_cast<int64_t>(ops[0].number2);
    return true;
  }
  return false;
}

// A signal trampoline's row: CFA = the word at sp + S (the interrupted
// sp), the interrupted pc and fp at sp + P and sp + F (glibc's x86-64
// __restore_rt: S 160, P 168, F 120). x86-64 only: arm64's would need lr
// too.
bool MakeSignalRow(Dwarf_Frame* f, const MachineRegs& m, tprof_unwind_row* row) {
  if (m.link_register) return false;
  Dwarf_Op* ops = nullptr;
  size_t n = 0;
  if (dwarf_frame_cfa(f, &ops, &n) != 0 || n != 2 || ops[1].atom != DW_OP_deref) return false;
  int64_t sp_at = 0, pc_at = 0, fp_at = 0;
  if (!SpOffset(ops, 1, m, &sp_at)) return false;
  Dwarf_Op mem[3];
  auto location = [&](int reg, int64_t* at) {
    Dwarf_Op* r = nullptr;
    size_t k = 0;
    if (dwarf_frame_register(f, reg, mem, &r, &k) != 0) return false;
    // libdw pushes the CFA first, as DW_CFA_expression's evaluation does.
    if (k == 2 && r[0].atom == DW_OP_call_frame_cfa) return SpOffset(r + 1, 1, m, at);
    return SpOffset(r, k, m, at);
  };
  if (!location(m.ra, &pc_at) || !location(m.fp, &fp_at)) return false;
  if (sp_at < 0 || sp_at > std::numeric_limits<int32_t>::max() || !FitsS16(pc_at - sp_at) ||
      !FitsS16(fp_at - sp_at))
    return false;
  *row = tprof_unwind_row{};
  row->cfa_base = TPROF_UNWIND_CFA_SIGNAL;
  row->cfa_offset = static_cast<int32_t>(sp_at);
  row->ra_offset = static_cast<int16_t>(pc_at - sp_at);
  row->fp_rule = TPROF_UNWIND_FP_AT_CFA;
  row->fp_offset = static_cast<int16_t>(fp_at - sp_at);
  return true;
}

// The row for the frame state f; false for a rule the table cannot state.
// *foreign_cfa: the return address is saved at or above the CFA, so the
// function's CFA is not its caller's sp anywhere in it (glibc's arm64
// lazy-binding resolver counts from below the PLT's push, where the
// return address already is): none of its rows can be used.
bool MakeRow(Dwarf_Frame* f, const MachineRegs& m, bool signal_frame, tprof_unwind_row* row,
             bool* foreign_cfa) {
  if (signal_frame) return MakeSignalRow(f, m, row);
  Dwarf_Op* ops = nullptr;
  size_t n = 0;
  if (dwarf_frame_cfa(f, &ops, &n) != 0 || n == 0) return false;
  int64_t cfa_off = 0;
  if (n == 1 && ops[0].atom == DW_OP_bregx && (ops[0].number == Dwarf_Word(m.sp) ||
                                               ops[0].number == Dwarf_Word(m.fp))) {
    row->cfa_base = ops[0].number == Dwarf_Word(m.sp) ? TPROF_UNWIND_CFA_SP : TPROF_UNWIND_CFA_FP;
    cfa_off = static_cast<int64_t>(ops[0].number2);
  } else if (m.sp == 7 && IsPltExpression(ops, n)) {
    row->cfa_base = TPROF_UNWIND_CFA_PLT;
    cfa_off = static_cast<int64_t>(ops[0].number);
  } else {
    return false;
  }
  if (cfa_off < std::numeric_limits<int32_t>::min() || cfa_off > std::numeric_limits<int32_t>::max())
    return false;
  row->cfa_offset = static_cast<int32_t>(cfa_off);

  int64_t off = 0;
  switch (RegisterRule(f, m.ra, &off)) {
    case 0:  // same value: still in the link register
      if (!m.link_register) return false;
      row->ra_rule = TPROF_UNWIND_RA_IN_LR;
      break;
    case 1:
      if (off >= 0) *foreign_cfa = true;
      if (!FitsS16(off) || off >= 0) return false;
      row->ra_rule = TPROF_UNWIND_RA_AT_CFA;
      row->ra_offset = static_cast<int16_t>(off);
      break;
    case 2:  // no caller: the outermost frame
      *row = tprof_unwind_row{};
      row->cfa_base = TPROF_UNWIND_CFA_END;
      return true;
    default:
      return false;
  }
  switch (RegisterRule(f, m.fp, &off)) {
    case 0:
      row->fp_rule = TPROF_UNWIND_FP_SAME;
      break;
    case 1:
      if (!FitsS16(off) || off >= 0) return false;
      row->fp_rule = TPROF_UNWIND_FP_AT_CFA;
      row->fp_offset = static_cast<int16_t>(off);
      break;
    default:  // undefined, or somewhere the walk cannot follow
      row->fp_rule = TPROF_UNWIND_FP_UNKNOWN;
      break;
  }
  return true;
}

bool SameRules(const tprof_unwind_row& a, const tprof_unwind_row& b) {
  return a.cfa_base == b.cfa_base && a.cfa_offset == b.cfa_offset && a.fp_rule == b.fp_rule &&
         a.fp_offset == b.fp_offset && a.ra_rule == b.ra_rule && a.ra_offset == b.ra_offset;
}

// Appends a row unless it only repeats the one before.
void Append(UnwindTable* t, const tprof_unwind_row& row) {
  if (!t->rows.empty()) {
    if (row.start <= t->rows.back().start) return;
    if (SameRules(row, t->rows.back())) return;
  }
  t->rows.push_back(row);
}

// Reads a little-endian value of n bytes.
int64_t ReadLe(const uint8_t* p, size_t n, bool is_signed) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v |= uint64_t(p[i]) << (8 * i);
  if (is_signed && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t(0) << (8 * n);
  return static_cast<int64_t>(v);
}

// The start addresses of the FDEs, from .eh_frame_hdr's search table
// (sorted, as the unwinder's binary search needs).
Expected<std::vector<uint64_t>> FunctionStarts(Elf* elf) {
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) return Error::FromErrno(EINVAL, "no program headers");
  for (size_t i = 0; i < phnum; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, int(i), &ph) || ph.p_type != PT_GNU_EH_FRAME) continue;
    Elf_Data* d = elf_getdata_rawchunk(elf, int64_t(ph.p_offset), ph.p_filesz, ELF_T_BYTE);
    if (!d || d->d_size < 4) break;
    const auto* p = static_cast<const uint8_t*>(d->d_buf);
    const size_t size = d->d_size;
    // version 1; eh_frame_ptr pcrel|sdata4 or |sdata8; fde_count udata4;
    // table datarel|sdata4: what every linker writes.
    const size_t ptr_size = (p[1] & 0x0f) == DW_EH_PE_sdata8 ? 8 : 4;
    if (p[0] != 1 || p[2] != (DW_EH_PE_udata4) || p[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4) ||
        size < 4 + ptr_size + 4)
      return Error::FromErrno(EINVAL, ".eh_frame_hdr in a form not read here");
    const uint64_t count = uint64_t(ReadLe(p + 4 + ptr_size, 4, false));
    const uint8_t* table = p + 8 + ptr_size;
    if (count > (size - 8 - ptr_size) / 8)
      return Error::FromErrno(EINVAL, ".eh_frame_hdr's table is cut short");
    std::vector<uint64_t> starts;
    starts.reserve(count);
    for (uint64_t k = 0; k < count; k++)
      starts.push_back(ph.p_vaddr + uint64_t(ReadLe(table + 8 * k, 4, true)));
    return starts;
  }
  return Error::FromErrno(ENOENT, "no .eh_frame_hdr");
}

// The file's .debug_frame section, nullptr if none.
Elf_Scn* DebugFrameSection(Elf* elf) {
  size_t strndx = 0;
  if (elf_getshdrstrndx(elf, &strndx) != 0) return nullptr;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    const char* n = gelf_getshdr(scn, &sh) ? elf_strptr(elf, strndx, sh.sh_name) : nullptr;
    if (n && sh.sh_type == SHT_PROGBITS && std::strcmp(n, ".debug_frame") == 0) return scn;
  }
  return nullptr;
}

// The [start, end) of each function .debug_frame describes: DWARF's own
// CFI, which code built with -g but without unwind tables
// (-fno-asynchronous-unwind-tables) has instead of .eh_frame. Its FDEs
// give absolute addresses of the ELF class's size (8 bytes here). Read
// after dwarf_begin_elf, which decompresses the section in place.
std::vector<std::pair<uint64_t, uint64_t>> DebugFrameFunctions(Elf* elf, Elf_Scn* scn) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  const auto* ident = reinterpret_cast<const unsigned char*>(elf_getident(elf, nullptr));
  Elf_Data* d = elf_getdata(scn, nullptr);
  if (!ident || ident[EI_CLASS] != ELFCLASS64 || !d) return out;
  Dwarf_Off next = 0;
  for (Dwarf_Off off = 0;; off = next) {
    Dwarf_CFI_Entry e;
    if (dwarf_next_cfi(ident, d, false, off, &next, &e) != 0) break;  // the end, or damage
    if (dwarf_cfi_cie_p(&e) || e.fde.end - e.fde.start < 16) continue;
    const auto start = uint64_t(ReadLe(e.fde.start, 8, false));
    const auto size = uint64_t(ReadLe(e.fde.start + 8, 8, false));
    // A zero start is code the linker discarded (its FDE stays).
    if (start && size && start + size > start) out.emplace_back(start, start + size);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The section named `name` (executable code), nullptr if none.
Elf_Scn* CodeSection(Elf* elf, const char* name, GElf_Shdr* sh) {
  size_t strndx = 0;
  if (elf_getshdrstrndx(elf, &strndx) != 0) return nullptr;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    if (!gelf_getshdr(scn, sh) || sh->sh_type != SHT_PROGBITS || !(sh->sh_flags & SHF_EXECINSTR)) continue;
    const char* n = elf_strptr(elf, strndx, sh->sh_name);
    if (n && std::strcmp(n, name) == 0) return scn;
  }
  return nullptr;
}

// Gives [start, end) the rows `inner` (sorted, the first at start), keeping
// what covered `end` before.
void Overlay(std::vector<tprof_unwind_row>* rows, uint64_t start, uint64_t end,
             const std::vector<tprof_unwind_row>& inner) {
  if (start >= end || end > std::numeric_limits<uint32_t>::max() || inner.empty()) return;
  tprof_unwind_row after{};  // NONE where no row covered it
  std::vector<tprof_unwind_row> out;
  out.reserve(rows->size() + inner.size() + 1);
  bool placed = false;
  auto place = [&] {
    out.insert(out.end(), inner.begin(), inner.end());
    after.start = static_cast<uint32_t>(end);
    out.push_back(after);
    placed = true;
  };
  for (const tprof_unwind_row& r : *rows) {
    if (r.start <= end) after = r;
    if (r.start >= start && r.start <= end) continue;
    if (r.start > end && !placed) place();
    out.push_back(r);
  }
  if (!placed) place();
  *rows = std::move(out);
}

tprof_unwind_row Arm64Row(uint64_t at, int32_t cfa_offset) {
  tprof_unwind_row r{};
  r.start = static_cast<uint32_t>(at);
  r.cfa_base = TPROF_UNWIND_CFA_SP;
  r.cfa_offset = cfa_offset;
  if (cfa_offset == 0) {  // nothing pushed: the caller is lr
    r.ra_rule = TPROF_UNWIND_RA_IN_LR;
    r.fp_rule = TPROF_UNWIND_FP_SAME;
  } else {  // the frame record {fp, lr} just below the CFA
    r.ra_rule = TPROF_UNWIND_RA_AT_CFA;
    r.ra_offset = -8;
    r.fp_rule = TPROF_UNWIND_FP_AT_CFA;
    r.fp_offset = -16;
  }
  return r;
}

// arm64 code without CFI whose rules are known:
// - .plt stubs jump with sp, fp and lr untouched: the caller is lr (the
//   walk takes it in the innermost frame only, the one a stub can be);
// - .init and .fini (crti/crtn): `nop|bti c|paciasp; stp x29, x30, [sp,
//   #-16]!; mov x29, sp; ...; ldp x29, x30, [sp], #16; ret`, checked word
//   by word.
// A frame-pointer step there skipped the caller and walked on from a
// wrong sp (`_fini` at its first instruction read garbage).
void AddArm64CodeWithoutCfi(Elf* elf, std::vector<tprof_unwind_row>* rows) {
  GElf_Shdr sh;
  if (CodeSection(elf, ".plt", &sh)) Overlay(rows, sh.sh_addr, sh.sh_addr + sh.sh_size, {Arm64Row(sh.sh_addr, 0)});
  for (const char* name : {".init", ".fini"}) {
    Elf_Scn* scn = CodeSection(elf, name, &sh);
    Elf_Data* d = scn ? elf_rawdata(scn, nullptr) : nullptr;
    if (!d || d->d_size != sh.sh_size || sh.sh_size < 20 || sh.sh_size % 4) continue;
    const auto* b = static_cast<const uint8_t*>(d->d_buf);
    auto word = [&](size_t at) { return static_cast<uint32_t>(ReadLe(b + at, 4, false)); };
    const uint32_t first = word(0);
    const size_t n = sh.sh_size;
    if ((first != 0xd503201f && first != 0xd503245f && first != 0xd503233f) || word(4) != 0xa9bf7bfd ||
        word(8) != 0x910003fd || word(n - 8) != 0xa8c17bfd || word(n - 4) != 0xd65f03c0)
      continue;
    const uint64_t s = sh.sh_addr;
    Overlay(rows, s, s + n, {Arm64Row(s, 0), Arm64Row(s + 8, 16), Arm64Row(s + n - 4, 0)});
  }
}

std::vector<UnwindTable::Segment> LoadSegments(Elf* elf) {
  std::vector<UnwindTable::Segment> out;
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) == 0)
    for (size_t i = 0; i < phnum; i++) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, int(i), &ph) && ph.p_type == PT_LOAD)
        out.push_back({ph.p_offset, ph.p_vaddr, ph.p_filesz});
    }
  return out;
}

// Calls visit(name, sym) for each .dynsym symbol.
template <typename Visit>
void ForEachDynamicSymbol(Elf* elf, Visit visit) {
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
      GElf_Sym sym;
      const char* n = gelf_getsym(d, int(i), &sym) ? elf_strptr(elf, sh.sh_link, sym.st_name) : nullptr;
      if (n) visit(n, sym);
    }
  }
}

// The address of a .dynsym symbol; 0 if none has the name.
uint64_t DynamicSymbol(Elf* elf, const char* name) {
  uint64_t at = 0;
  ForEachDynamicSymbol(elf, [&](const char* n, const GElf_Sym& sym) {
    if (!at && std::strcmp(n, name) == 0) at = sym.st_value;
  });
  return at;
}

// arm64's signal trampoline, the vDSO's __kernel_rt_sigreturn (no CFI since
// Linux 5.8; unwinders recognise its two instructions, as libgcc does): a
// SIGNAL row over it and the nop before it (a return address's pc - 4
// falls there). The handler returns to it with sp at the struct
// rt_sigframe: siginfo (128 bytes), then the ucontext, whose uc_mcontext
// (struct sigcontext, 16-aligned) is at 176: fault_address, regs[31], sp,
// pc. So x29 is at 544, x30 at 552, sp at 560 and pc at 568.
void AddArm64SignalTrampoline(Elf* elf, std::vector<tprof_unwind_row>* rows) {
  const uint64_t at = DynamicSymbol(elf, "__kernel_rt_sigreturn");
  GElf_Shdr sh;
  Elf_Scn* scn = at ? CodeSection(elf, ".text", &sh) : nullptr;
  Elf_Data* d = scn ? elf_rawdata(scn, nullptr) : nullptr;
  if (!d || d->d_size != sh.sh_size || at < sh.sh_addr + 4 || at + 8 > sh.sh_addr + sh.sh_size)
    return;
  const auto* b = static_cast<const uint8_t*>(d->d_buf) + (at - sh.sh_addr);
  auto word = [&](int64_t off) { return static_cast<uint32_t>(ReadLe(b + off, 4, false)); };
  if (word(0) != 0xd2801168 || word(4) != 0xd4000001) return;  // mov x8, #139; svc #0
  const uint64_t start = word(-4) == 0xd503201f ? at - 4 : at;
  tprof_unwind_row r{};
  r.start = static_cast<uint32_t>(start);
  r.cfa_base = TPROF_UNWIND_CFA_SIGNAL;
  r.cfa_offset = 560;
  r.ra_offset = 8;
  r.ra_rule = TPROF_UNWIND_RA_IN_LR;  // x30 beside x29: the interrupted lr
  r.fp_rule = TPROF_UNWIND_FP_AT_CFA;
  r.fp_offset = -16;
  Overlay(rows, start, at + 8, {r});
}

// Whether the arm64 code in [b, b + size) is a leaf that keeps sp and lr
// as its caller left them: no call (bl, blr and their pointer-authenticated
// forms), no write of sp (add/sub to sp, a load or store that writes its
// sp base back).
bool Arm64CodeIsALeaf(const uint8_t* b, size_t size) {
  for (size_t at = 0; at + 4 <= size; at += 4) {
    const auto w = static_cast<uint32_t>(ReadLe(b + at, 4, false));
    const bool sp_base = ((w >> 5) & 31) == 31, sp_dest = (w & 31) == 31;
    if ((w & 0xfc000000) == 0x94000000 ||                                     // bl
        (w & 0xfffffc1f) == 0xd63f0000 ||                                     // blr
        (w & 0xfefff800) == 0xd63f0800 ||                                     // blraa, blrab (z)
        ((w & 0x1f000000) == 0x11000000 && !(w & 0x20000000) && sp_dest) ||  // add/sub imm
        ((w & 0x1f200000) == 0x0b200000 && !(w & 0x20000000) && sp_dest) ||  // add/sub ext
        ((w & 0x3a800000) == 0x28800000 && sp_base) ||                        // ldp/stp !
        ((w & 0x3b200400) == 0x38000400 && sp_base))                          // ldr/str !
      return false;
  }
  return true;
}

// arm64's vDSO without CFI (Linux 5.8 on): per .dynsym function of its
// .text, "the caller is in lr" where the function is a leaf (the clock and
// time functions: their fallback is an svc), else no rule, so that the
// walk stops there cut (getrandom's keeps a frame). A frame-pointer step
// in a leaf read the caller's x29, which code built without frame
// pointers (python3.11) holds data in.
std::vector<tprof_unwind_row> Arm64VdsoRows(Elf* elf) {
  GElf_Shdr sh;
  Elf_Scn* text = CodeSection(elf, ".text", &sh);
  Elf_Data* d = text ? elf_rawdata(text, nullptr) : nullptr;
  if (!d || d->d_size != sh.sh_size || sh.sh_addr + sh.sh_size > std::numeric_limits<uint32_t>::max())
    return {};
  std::vector<std::pair<uint64_t, uint64_t>> functions;  // [start, end)
  ForEachDynamicSymbol(elf, [&](const char*, const GElf_Sym& sym) {
    if (GELF_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_size && sym.st_value >= sh.sh_addr &&
        sym.st_value + sym.st_size <= sh.sh_addr + sh.sh_size)
      functions.emplace_back(sym.st_value, sym.st_value + sym.st_size);
  });
  std::sort(functions.begin(), functions.end());
  const tprof_unwind_row unstated{.start = 0, .cfa_base = TPROF_UNWIND_CFA_UNSTATED};
  std::vector<tprof_unwind_row> rows;
  auto add = [&](uint64_t at, tprof_unwind_row r) {
    r.start = static_cast<uint32_t>(at);
    if (!rows.empty() && rows.back().start == r.start) rows.pop_back();
    rows.push_back(r);
  };
  add(sh.sh_addr, unstated);
  uint64_t covered = sh.sh_addr;
  for (const auto& [start, end] : functions) {
    if (start < covered) continue;  // an alias, or overlapping: keep the first
    const auto* b = static_cast<const uint8_t*>(d->d_buf) + (start - sh.sh_addr);
    add(start, Arm64CodeIsALeaf(b, end - start) ? Arm64Row(start, 0) : unstated);
    add(end, unstated);
    covered = end;
  }
  add(sh.sh_addr + sh.sh_size, tprof_unwind_row{});
  return rows;
}

}  // namespace

Expected<UnwindTable> BuildUnwindTable(Elf* elf) {
  GElf_Ehdr eh;
  if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
    return Error::FromErrno(EINVAL, "not an ELF file");
  MachineRegs m{};
  if (eh.e_machine == EM_X86_64)
    m = {7, 6, 16, false};
  else if (eh.e_machine == EM_AARCH64)
    m = {31, 29, 30, true};
  else
    return Error::FromErrno(ENOTSUP, "unwind tables are made for x86-64 and arm64 only");
  auto eh_starts = FunctionStarts(elf);
  if (!eh_starts && eh_starts.error().code() != std::errc::no_such_file_or_directory)
    return eh_starts.error();
  std::unique_ptr<Dwarf_CFI, CfiDeleter> eh_cfi(eh_starts ? dwarf_getcfi_elf(elf) : nullptr);
  if (eh_starts && !eh_cfi) return Error::FromErrno(ENOENT, "no .eh_frame");
  // .debug_frame, for the functions .eh_frame does not describe. Only a
  // file that has one is opened for DWARF: dwarf_begin_elf inflates every
  // compressed debug section (an unstripped -gz build's).
  Elf_Scn* debug_frame = DebugFrameSection(elf);
  std::unique_ptr<Dwarf, DwarfDeleter> dwarf(
      debug_frame ? dwarf_begin_elf(elf, DWARF_C_READ, nullptr) : nullptr);
  Dwarf_CFI* debug_cfi = dwarf ? dwarf_getcfi(dwarf.get()) : nullptr;  // dwarf owns it

  struct Function {
    uint64_t start;
    Dwarf_CFI* cfi;
  };
  std::vector<Function> functions;
  if (eh_starts)
    for (uint64_t s : *eh_starts) functions.push_back({s, eh_cfi.get()});
  if (debug_cfi)
    for (const auto& [start, end] : DebugFrameFunctions(elf, debug_frame)) {
      Dwarf_Frame* raw = nullptr;
      if (eh_cfi && dwarf_cfi_addrframe(eh_cfi.get(), start, &raw) == 0) {
        std::free(raw);  // .eh_frame has it: the one the program unwinds with
        continue;
      }
      functions.push_back({start, debug_cfi});
    }
  if (functions.empty() && !eh_starts) return eh_starts.error();
  std::stable_sort(functions.begin(), functions.end(),
                   [](const Function& a, const Function& b) { return a.start < b.start; });

  UnwindTable t;
  t.segments = LoadSegments(elf);
  constexpr uint64_t kMaxAddress = std::numeric_limits<uint32_t>::max();
  for (size_t i = 0; i < functions.size(); i++) {
    const uint64_t next = i + 1 < functions.size() ? functions[i + 1].start : kMaxAddress;
    uint64_t addr = functions[i].start;
    if (addr >= kMaxAddress) return Error::FromErrno(EFBIG, "code above 4 GiB in the file");
    if (addr == next) continue;  // two FDEs at one address: the first
    t.functions++;
    if (functions[i].cfi == debug_cfi) t.debug_frame_functions++;
    const size_t first_row = t.rows.size();
    bool foreign_cfa = false;
    while (addr < next) {
      Dwarf_Frame* raw = nullptr;
      if (dwarf_cfi_addrframe(functions[i].cfi, addr, &raw) != 0) break;
      FramePtr f(raw);
      Dwarf_Addr start = 0, end = 0;
      bool signal_frame = false;
      if (dwarf_frame_info(f.get(), &start, &end, &signal_frame) < 0 || end <= addr) break;
      tprof_unwind_row row{};
      if (!MakeRow(f.get(), m, signal_frame, &row, &foreign_cfa)) {
        // CFI, but not in the table's terms: the walk stops (frame
        // pointers read through frameless code give garbage callers).
        row = tprof_unwind_row{};
        row.cfa_base = TPROF_UNWIND_CFA_UNSTATED;
        t.unsupported++;
      }
      row.start = static_cast<uint32_t>(addr);
      Append(&t, row);
      addr = std::min<uint64_t>(end, kMaxAddress);
    }
    if (foreign_cfa) {
      // One UNSTATED row for the whole function, from its start.
      tprof_unwind_row stop{};
      stop.cfa_base = TPROF_UNWIND_CFA_UNSTATED;
      stop.start = static_cast<uint32_t>(functions[i].start);
      t.rows.resize(first_row);
      t.unsupported++;
      Append(&t, stop);
    }
    // Past the function's CFI, up to the next one: frame pointers.
    if (addr < next) {
      tprof_unwind_row none{};
      none.start = static_cast<uint32_t>(addr);
      Append(&t, none);
    }
  }
  if (m.link_register) AddArm64CodeWithoutCfi(elf, &t.rows);
  return t;
}

Expected<UnwindTable> BuildUnwindTable(const std::string& path) {
  elf_version(EV_CURRENT);
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::FromErrno(errno, path);
  Elf* elf = elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr);
  if (!elf) return Error::FromErrno(EINVAL, path + ": not an ELF file");
  auto t = BuildUnwindTable(elf);
  elf_end(elf);
  if (!t) return Error(t.error().code(), path + ": " + t.error().message());
  return t;
}

Expected<UnwindTable> BuildVdsoUnwindTable() {
  const uintptr_t base = getauxval(AT_SYSINFO_EHDR);
  if (!base) return Error::FromErrno(ENOENT, "no vDSO");
  // Its size: the [vdso] line of /proc/self/maps.
  std::ifstream maps("/proc/self/maps");
  size_t size = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.find("[vdso]") == std::string::npos) continue;
    char* end = nullptr;
    const uintptr_t start = std::strtoull(line.c_str(), &end, 16);
    const uintptr_t stop = end && *end == '-' ? std::strtoull(end + 1, nullptr, 16) : 0;
    if (start == base && stop > start) size = stop - start;
    break;
  }
  if (!size) return Error::FromErrno(ENOENT, "the vDSO's mapping is not in /proc/self/maps");
  // A copy: libelf may write to the image it reads, and the vDSO is read-only.
  std::vector<char> image(reinterpret_cast<const char*>(base),
                          reinterpret_cast<const char*>(base) + size);
  elf_version(EV_CURRENT);
  Elf* elf = elf_memory(image.data(), image.size());
  if (!elf) return Error::FromErrno(EINVAL, "[vdso]: not an ELF image");
  auto t = BuildVdsoUnwindTable(elf);
  elf_end(elf);
  if (!t) return Error(t.error().code(), "[vdso]: " + t.error().message());
  return t;
}

Expected<UnwindTable> BuildVdsoUnwindTable(Elf* elf) {
  GElf_Ehdr eh;
  const bool arm64 = elf && gelf_getehdr(elf, &eh) && eh.e_machine == EM_AARCH64;
  auto t = BuildUnwindTable(elf);
  if (!arm64) return t;
  if (!t && t.error().code() == std::errc::no_such_file_or_directory) {
    // No CFI at all: rules from the code (Arm64VdsoRows).
    UnwindTable leaves;
    leaves.segments = LoadSegments(elf);
    leaves.rows = Arm64VdsoRows(elf);
    if (leaves.rows.empty()) return t;
    t = Expected<UnwindTable>(std::move(leaves));
  }
  if (t) AddArm64SignalTrampoline(elf, &t->rows);
  return t;
}

}  // namespace tprof
