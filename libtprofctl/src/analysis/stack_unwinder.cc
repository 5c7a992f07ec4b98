#include "tprof/analysis/stack_unwinder.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <utility>

#include "core/unwind_walk.h"

namespace tprof {

StackUnwinder::StackUnwinder(std::shared_ptr<UnwindTableCache> tables)
    : tables_(tables ? std::move(tables) : std::make_shared<UnwindTableCache>()) {}
StackUnwinder::~StackUnwinder() = default;
StackUnwinder::StackUnwinder(StackUnwinder&&) noexcept = default;
StackUnwinder& StackUnwinder::operator=(StackUnwinder&&) noexcept = default;

namespace {

struct WalkContext {
  const std::vector<Mapping>* maps;
  const tprof_rec_user_stack* regs;
  const uint8_t* stack;
  UnwindTableCache* tables;
  bool build_tables;
  bool unmapped = false;  // a pc in no mapping was looked up
};

int ReadCopy(void* ctx, u64 addr, u64* val) {
  const auto* w = static_cast<WalkContext*>(ctx);
  const uint64_t sp = w->regs->sp;
  if (addr < sp || addr - sp > w->regs->bytes || w->regs->bytes - (addr - sp) < 8) return -EFAULT;
  std::memcpy(val, w->stack + (addr - sp), 8);
  return 0;
}

const tprof_unwind_row* FindRow(void* ctx, u64 pc) {
  auto* w = static_cast<WalkContext*>(ctx);
  const auto& maps = *w->maps;
  auto it = std::upper_bound(maps.begin(), maps.end(), pc,
                             [](uint64_t a, const Mapping& m) { return a < m.start; });
  if (it == maps.begin() || pc >= std::prev(it)->end) {
    // In no mapping known (yet): frame pointers read on from here give
    // garbage as often as callers, so the walk stops, cut.
    static const tprof_unwind_row kUnmapped = [] {
      tprof_unwind_row r{};
      r.cfa_base = TPROF_UNWIND_CFA_UNSTATED;
      return r;
    }();
    w->unmapped = true;
    return &kUnmapped;
  }
  const Mapping& m = *--it;
  const UnwindTable* t = w->build_tables ? w->tables->Get(m.path) : w->tables->Find(m.path);
  if (!t) return nullptr;
  const uint64_t offset = pc - m.start + m.pgoff;
  for (const UnwindTable::Segment& s : t->segments)
    if (offset >= s.offset && offset - s.offset < s.filesz)
      return tprof_unwind_table_find(t->rows.data(), static_cast<u32>(t->rows.size()),
                                     offset - s.offset + s.vaddr);
  return nullptr;
}

}  // namespace

StackUnwinder::Walk StackUnwinder::Unwind(const std::vector<Mapping>& maps,
                                          const tprof_rec_user_stack& regs, const uint8_t* stack,
                                          unsigned max, bool build_tables) {
  Walk out;
  if (!max) return out;
  WalkContext ctx{&maps, &regs, stack, tables_.get(), build_tables, false};
  std::vector<u64> callers(max);
  std::vector<u8> how(max);
  tprof_unwind_walker w{};
  w.regs = {regs.pc, regs.sp, regs.fp, regs.lr};
  w.find = FindRow;
  w.read = ReadCopy;
  w.ctx = &ctx;
  w.ra_strip = regs.pac_mask;
  w.out = callers.data();
  w.how = how.data();
  w.max = max;
  // Each frame reads at most two words (a signal frame four).
  w.max_reads = 2 * max + 8;
  tprof_unwind_stop stop{};
  const unsigned n = tprof_unwind_walk(&w, &stop);
  out.callers.assign(callers.begin(), callers.begin() + n);
  for (unsigned i = 0; i < n; i++)
    (how[i] == TPROF_UNWOUND_CFI ? out.by_table : out.by_frame_pointer)++;
  out.whole = stop == TPROF_UNWIND_STOP_END;
  out.unmapped = ctx.unmapped;
  return out;
}

}  // namespace tprof
