// ProfileBuilder's cache of recently seen sample records. A profiled
// program mostly repeats a few (ip, stack, thread, CPU) records, and
// reducing one through the profile's ordered maps and the stack table's
// hash cost ~1,100 instructions a sample with 32-frame stacks, twice what
// `perf record -g` spends copying it (bench/sampling_bench, section 4;
// bench/reduce_bench). A record equal to one seen before (every byte but
// its time) adds to the same counts: a slot keeps where they are, as
// pointers into the profile's std::maps, whose nodes never move. Only the
// context's count moves on, with its time bucket: it is an entry of the
// builder's pending context list, which is merged into the context table
// (emptied) now and then (ProfileBuilder::MergeContexts): the slot's
// context entry is used only in the bucket and epoch it was made in.
// A miss (a new record, or two hot records sharing a slot) takes the full
// path, which refills the slot; the cache never changes what is counted.
#ifndef TPROF_RECENT_SAMPLES_H_
#define TPROF_RECENT_SAMPLES_H_

#include <linux/tprof.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tprof/analysis/profile.h"

namespace tprof {

// Where one sample record's counts are, and the keys to find them again.
struct RecentSample {
  uint32_t size = 0;  // the record's hdr.size; 0: an empty slot
  // The record's words after time_ns: pid and tid, ip, caller, space_id,
  // flags and cpu, then its struct tprof_rec_stack if it has one.
  uint64_t identity[6] = {};
  SampleKey key;
  uint32_t tid = 0, cpu = 0, stack = 0;  // stack: 1-based id, 0 none
  uint64_t caller = 0;                   // 0: none
  uint64_t* sample_count = nullptr;      // Profile::samples
  uint64_t* caller_count = nullptr;      // Profile::caller_edges, if a caller
  uint64_t* cpu_count = nullptr;         // Profile::cpus[cpu].samples
  uint64_t* stack_count = nullptr;       // Profile::stack_samples, if a stack
  size_t context_entry = 0;              // the builder's pending_contexts_[i - 1], 0 none
  uint64_t context_bucket = 0;
  uint64_t context_epoch = 0;
};

class RecentSamples {
 public:
  // The slot holding a record equal to `rec` (size bytes, already checked
  // to hold a struct tprof_rec_sample) but for its time, or nullptr.
  // `stacks` is the profile's stack table, which the frames are compared to.
  RecentSample* Find(const unsigned char* rec, uint32_t size, const std::vector<RawStack>& stacks) {
    Shape shape;
    if (slots_.empty() || !ShapeOf(rec, size, &shape)) return nullptr;
    uint64_t id[kIdentityWords];
    Identity(rec, shape, id);
    RecentSample& e = slots_[Index(rec, shape, id)];
    uint64_t diff = e.size ^ size;  // one branch for the whole identity
    for (size_t i = 0; i < kIdentityWords; ++i) diff |= e.identity[i] ^ id[i];
    if (diff) return nullptr;
    if (shape.frames) {
      const RawStack& raw = stacks[e.stack - 1];
      const unsigned char* frames = rec + kFramesOffset;
      const size_t kernel_bytes = raw.kernel.size() * sizeof(uint64_t);
      if ((kernel_bytes && std::memcmp(raw.kernel.data(), frames, kernel_bytes) != 0) ||
          (!raw.user.empty() && std::memcmp(raw.user.data(), frames + kernel_bytes,
                                            raw.user.size() * sizeof(uint64_t)) != 0))
        return nullptr;
    }
    return &e;
  }

  // Keeps a record the full path has just counted (a well-formed one;
  // records of other shapes, e.g. from a newer module, are not kept).
  void Remember(const unsigned char* rec, uint32_t size, const RecentSample& counted) {
    Shape shape;
    if (!ShapeOf(rec, size, &shape)) return;
    if (slots_.empty()) slots_.resize(kSlots);
    uint64_t id[kIdentityWords];
    Identity(rec, shape, id);
    RecentSample& e = slots_[Index(rec, shape, id)];
    e = counted;
    e.size = size;
    std::memcpy(e.identity, id, sizeof(id));
  }

  // Forgets every slot (the profile they point into is handed over).
  void Clear() { slots_.clear(); }

 private:
  // Direct-mapped: a program's hot records are usually far fewer, and a
  // collision costs only the full path. 1,024 slots, ~170 KB.
  static constexpr size_t kSlotBits = 10;
  static constexpr size_t kSlots = size_t{1} << kSlotBits;
  static constexpr size_t kIdentityOffset = offsetof(tprof_rec_sample, pid);

  static constexpr size_t kIdentityWords = 6;
  static constexpr size_t kFramesOffset = sizeof(tprof_rec_sample) + sizeof(tprof_rec_stack);

  struct Shape {
    bool stack = false;
    size_t frames = 0;
  };

  // The shapes the kernel writes: a sample without a stack, or one with
  // exactly its stack's frames.
  static bool ShapeOf(const unsigned char* rec, uint32_t size, Shape* shape) {
    uint32_t flags;
    std::memcpy(&flags, rec + offsetof(tprof_rec_sample, flags), sizeof(flags));
    shape->stack = flags & TPROF_SAMPLE_STACK;
    if (!shape->stack) {
      shape->frames = 0;
      return size == sizeof(tprof_rec_sample);
    }
    if (size < kFramesOffset) return false;
    tprof_rec_stack st;
    std::memcpy(&st, rec + sizeof(tprof_rec_sample), sizeof(st));
    shape->frames = size_t{st.nr_kernel} + st.nr_user;
    return size == kFramesOffset + shape->frames * sizeof(uint64_t);
  }

  // The record's words after time_ns (the last one 0 without a stack).
  static void Identity(const unsigned char* rec, const Shape& shape, uint64_t id[kIdentityWords]) {
    std::memcpy(id, rec + kIdentityOffset, (kIdentityWords - 1) * sizeof(uint64_t));
    id[kIdentityWords - 1] = 0;
    if (shape.stack) std::memcpy(&id[kIdentityWords - 1], rec + sizeof(tprof_rec_sample), 8);
  }

  static uint64_t Word(const unsigned char* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }

  // What tells hot records apart: the thread, the ip, mode and CPU, the
  // stack's shape and its four innermost frames, which tell apart the
  // callers of one hot function (rotated so that equal words in different
  // places do not cancel), folded by one multiply.
  static size_t Index(const unsigned char* rec, const Shape& shape, const uint64_t id[]) {
    uint64_t h = id[0] ^ std::rotl(id[1], 16) ^ std::rotl(id[4], 32) ^ std::rotl(id[5], 48);
    const unsigned char* f = rec + kFramesOffset;
    if (shape.frames > 0) h ^= std::rotl(Word(f), 8);
    if (shape.frames > 1) h ^= std::rotl(Word(f + 8), 24);
    if (shape.frames > 2) h ^= std::rotl(Word(f + 16), 40);
    if (shape.frames > 3) h ^= std::rotl(Word(f + 24), 56);
    // The top bits: a multiply carries every input bit upwards only.
    return static_cast<size_t>((h * 0x9e3779b97f4a7c15ull) >> (64 - kSlotBits));
  }

  std::vector<RecentSample> slots_;
};

}  // namespace tprof

#endif  // TPROF_RECENT_SAMPLES_H_
