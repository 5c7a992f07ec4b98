// Unwind tables (<linux/tprof_unwind.h>) derived from an ELF file's CFI:
// per address range, how to find the caller's frame without frame
// pointers. The sampler walks stacks with them (kmod/core/unwind_walk.h).
#ifndef TPROF_UNWIND_TABLE_H_
#define TPROF_UNWIND_TABLE_H_

#include <linux/tprof_unwind.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tprof/base/expected.h"

struct Elf;  // libelf's handle

namespace tprof {

struct UnwindTable {
  std::vector<tprof_unwind_row> rows;  // sorted by start, ends with a NONE row
  // The file's loadable segments, to turn a mapped address's file offset
  // into the address the rows use.
  struct Segment {
    uint64_t offset = 0, vaddr = 0, filesz = 0;
  };
  std::vector<Segment> segments;
  uint64_t functions = 0;              // FDEs: functions with CFI
  uint64_t debug_frame_functions = 0;  // of which from .debug_frame
  // CFI rows the table cannot state (a CFA from another register or an
  // expression other than the PLT's, a signal frame, offsets out of range,
  // a register saved above the CFA): written as UNSTATED, where the walk
  // stops.
  uint64_t unsupported = 0;
};

// The table of an x86-64 or arm64 ELF file from its .eh_frame, found by its
// .eh_frame_hdr (PT_GNU_EH_FRAME), and from its .debug_frame for the
// functions .eh_frame does not describe (code built with -g but without
// unwind tables). ENOTSUP for another machine, ENOENT with neither,
// EINVAL for an .eh_frame_hdr it cannot read.
[[nodiscard]] Expected<UnwindTable> BuildUnwindTable(Elf* elf);
[[nodiscard]] Expected<UnwindTable> BuildUnwindTable(const std::string& path);
// The table of this process's vDSO, which every 64-bit process of this
// kernel maps (MAP records name it "[vdso]").
[[nodiscard]] Expected<UnwindTable> BuildVdsoUnwindTable();
// A vDSO image's table: its CFI; arm64's has none, so "the caller is in
// lr" over its code if all of it is leaves (else no rule: walks stop cut),
// and a SIGNAL row over its signal trampoline.
[[nodiscard]] Expected<UnwindTable> BuildVdsoUnwindTable(Elf* elf);

}  // namespace tprof

#endif  // TPROF_UNWIND_TABLE_H_
