// The PLT stubs of an ELF file, which no symbol table names: perf's
// dso__synthesize_plt_symbols and objdump's <puts@plt> labels name them
// from the relocations they jump through. Internal to the symbolizer.
//
// Layouts, as binutils' ld writes them (link-time addresses):
//   x86-64 .plt: a 16-byte header (PLT0, the lazy binder's entry) and
//     16-byte entries; without a header when the entries fill it.
//     .plt.sec (IBT, -z ibtplt or every input built with
//     -fcf-protection): 16-byte entries, no header; the .plt entries are
//     then the lazy half (endbr64; push index; jmp PLT0).
//     .plt.got: one entry (8 or 16 bytes, sh_entsize) per function whose
//     GOT slot is relocated eagerly (.rela.dyn, R_X86_64_GLOB_DAT), such as
//     __cxa_finalize.
//     An entry names its relocation by what it does: jmp *slot(%rip) (the
//     relocation whose r_offset is the slot) or push $index (.rela.plt's
//     index-th); else by position among .rela.plt sorted by r_offset.
//   arm64 .plt: a 32-byte header, then 16-byte entries (24 with BTI/PAC:
//     the size the entries fill), one per .rela.plt relocation in
//     r_offset (GOT slot) order.
#pragma once

#include <libelf.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tprof {

struct PltStub {
  uint64_t address = 0;  // link-time
  uint64_t size = 0;
  // The function the stub jumps to, as .dynsym (or a static program's
  // .symtab) names it, not demangled; "" for the header and for an IFUNC
  // resolved at load time (R_*_IRELATIVE), whose resolver is then at
  // ifunc_resolver.
  std::string symbol;
  uint64_t ifunc_resolver = 0;
  bool header = false;  // PLT0: the lazy binder's entry, no function's
};

// The stubs of elf's PLT sections, sorted by address; empty for other
// machines or when the sections are missing or empty (a separate debug
// file's are SHT_NOBITS).
[[nodiscard]] std::vector<PltStub> ReadPltStubs(Elf* elf);

// The stub holding a link-time address, nullptr if none.
[[nodiscard]] const PltStub* FindPltStub(const std::vector<PltStub>& stubs, uint64_t address);

}  // namespace tprof
