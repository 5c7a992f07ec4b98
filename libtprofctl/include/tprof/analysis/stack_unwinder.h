// Whole user stacks from the stack copies samples carry
// (TPROF_SAMPLE_USER_STACK): a walk over the copy with the unwind tables of
// the files the address space maps (unwind_table.h), frame pointers where
// no table covers a frame, as perf's --call-graph dwarf does afterwards.
#ifndef TPROF_STACK_UNWINDER_H_
#define TPROF_STACK_UNWINDER_H_

#include <linux/tprof.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tprof/analysis/profile.h"
#include "tprof/analysis/unwind_table_cache.h"

namespace tprof {

class StackUnwinder {
 public:
  // tables: shared with whoever else uses the recording's tables (the
  // recorder's loader); null: its own.
  explicit StackUnwinder(std::shared_ptr<UnwindTableCache> tables = nullptr);
  ~StackUnwinder();
  StackUnwinder(StackUnwinder&&) noexcept;
  StackUnwinder& operator=(StackUnwinder&&) noexcept;

  struct Walk {
    std::vector<uint64_t> callers;  // return addresses, innermost first
    unsigned by_table = 0;          // callers found by a table row
    unsigned by_frame_pointer = 0;  // by a frame-pointer step
    bool whole = false;             // reached the outermost frame
    bool unmapped = false;          // reached an address no mapping covers
  };
  // The callers of regs.pc over `stack` (regs.bytes of it from regs.sp),
  // through `maps` (the space's mappings, sorted by start), at most max.
  // build_tables false: only with the tables built already.
  [[nodiscard]] Walk Unwind(const std::vector<Mapping>& maps, const tprof_rec_user_stack& regs,
                            const uint8_t* stack, unsigned max, bool build_tables = true);

 private:
  std::shared_ptr<UnwindTableCache> tables_;
};

}  // namespace tprof

#endif  // TPROF_STACK_UNWINDER_H_
