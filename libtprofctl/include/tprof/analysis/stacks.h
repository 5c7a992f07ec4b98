// Whole stacks of samples (ABI 1.8, Profile::stacks): which recorded
// entries are frames, leaf first. The kernel part, then the user part; a
// kernel-mode sample's user part starts with the user ip it entered the
// kernel from. The leaf's recorded return address (TPROF_STACK_LEAF_RA)
// becomes a frame only where the user leaf keeps no frame yet, as its CFI
// says (Symbolizer::LeafReturnAddressLive): otherwise the frame-pointer
// chain already starts with the leaf's caller.
#ifndef TPROF_STACKS_H_
#define TPROF_STACKS_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "tprof/analysis/profile.h"
#include "tprof/analysis/symbolizer.h"

namespace tprof {

struct StackFrame {
  uint64_t address = 0;  // as recorded
  bool user = false;
  bool return_address = false;  // points after a call
  uint64_t space_id = 0;        // of a user address
  // The address that names the frame's function and line: the call
  // instruction for a return address (a call to a noreturn function can
  // be its caller's last instruction).
  uint64_t lookup() const { return return_address && address ? address - 1 : address; }
};

// The frames of one sample with its stack, leaf (the sampled ip) first.
[[nodiscard]] std::vector<StackFrame> ExpandStack(const SampleKey& key, const RawStack& stack,
                                                  Symbolizer& symbolizer);

// Every sample of the profile with the frames known for it, leaf first:
// its whole stack where one was recorded, else its caller edge
// (TPROF_SAMPLING_CALLERS), else the sampled ip alone. Counts add up to
// profile.samples.
void ForEachSampleStack(
    const Profile& profile, Symbolizer& symbolizer,
    const std::function<void(const SampleKey&, const std::vector<StackFrame>&, uint64_t)>& fn);

// Resolves one frame of a sample of key's process.
inline const Location& ResolveFrame(Symbolizer& symbolizer, const SampleKey& key,
                                    const StackFrame& frame) {
  return symbolizer.Resolve(key.pid, frame.user ? frame.space_id : 0, frame.lookup(), frame.user);
}

}  // namespace tprof

#endif  // TPROF_STACKS_H_
