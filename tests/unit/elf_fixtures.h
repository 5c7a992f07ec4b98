// Known ELF files for the unit tests, and profiles that map them: this test
// program as /proc/self/maps shows it, and libsymtest.so in the variants
// the Makefile builds under build/tests/symfiles from
// tests/unit/symfiles/symtest.c (full/: with DWARF; link/: stripped, its
// debug file in link/.debug/ by .gnu_debuglink; bare/: stripped, its debug
// file only in debug/.build-id/; rebuilt/: another build id, st_hidden moved;
// mini/: stripped, its .symtab in MiniDebugInfo).
#ifndef TPROF_TESTS_UNIT_ELF_FIXTURES_H_
#define TPROF_TESTS_UNIT_ELF_FIXTURES_H_

#include <gelf.h>

#include <cstdint>
#include <string>

#include "tprof/analysis/profile.h"

namespace tprof::test {

// Where the tests "load" libsymtest.so, and the process and space it is in.
inline constexpr uint32_t kSymPid = 42;
inline constexpr uint64_t kSymSpace = 7;
inline constexpr uint64_t kSymBase = 0x7f0000000000;

// build/tests/symfiles: beside the test program.
[[nodiscard]] std::string SymFiles();

// The link-time address of `name` in elf's sections of type sh_type
// (SHT_SYMTAB, SHT_DYNSYM); 0 if none has it.
[[nodiscard]] uint64_t ElfSymbol(Elf* elf, uint32_t sh_type, const std::string& name);

// The link-time address of a function in the unstripped libsymtest.so's
// .symtab (full/); 0 if the file is missing.
[[nodiscard]] uint64_t SymbolAddress(const std::string& name);
// Its size there; 0 if the file is missing.
[[nodiscard]] uint64_t SymbolSize(const std::string& name);

// The ELF file at path mapped at base (0: at its link-time addresses, as
// a non-PIE program is) in (kSymPid, kSymSpace), one mapping per PT_LOAD as
// the kernel would.
[[nodiscard]] Profile LibraryProfile(const std::string& path, uint64_t base = kSymBase);

// This process's executable file mappings as (pid, space), as the kernel
// would report them in TPROF_REC_MAP records.
[[nodiscard]] Profile SelfProfile(uint32_t pid, uint64_t space);

}  // namespace tprof::test

#endif  // TPROF_TESTS_UNIT_ELF_FIXTURES_H_
