#include "tprof/analysis/stacks.h"

#include <algorithm>

namespace tprof {

std::vector<StackFrame> ExpandStack(const SampleKey& key, const RawStack& stack,
                                    Symbolizer& symbolizer) {
  std::vector<StackFrame> frames;
  const uint64_t space = key.user() ? key.space_id : stack.space_id;
  frames.reserve(1 + stack.kernel.size() + stack.user.size());
  frames.push_back({key.ip, key.user(), false, key.space_id});
  for (uint64_t ret : stack.kernel) frames.push_back({ret, false, true, 0});
  size_t u = 0;
  uint64_t user_leaf = key.user() ? key.ip : 0;
  if ((stack.flags & TPROF_STACK_USER_IP) && u < stack.user.size()) {
    user_leaf = stack.user[u++];
    frames.push_back({user_leaf, true, false, space});
  }
  if ((stack.flags & TPROF_STACK_LEAF_RA) && u < stack.user.size()) {
    const uint64_t ra = stack.user[u++];
    if (ra && user_leaf && symbolizer.LeafReturnAddressLive(key.pid, space, user_leaf))
      frames.push_back({ra, true, true, space});
  }
  for (; u < stack.user.size(); ++u) frames.push_back({stack.user[u], true, true, space});
  return frames;
}

void ForEachSampleStack(
    const Profile& p, Symbolizer& symbolizer,
    const std::function<void(const SampleKey&, const std::vector<StackFrame>&, uint64_t)>& fn) {
  std::vector<StackFrame> frames;
  for (const auto& [key, count] : p.samples) {
    uint64_t done = 0;
    for (auto it = p.stack_samples.lower_bound({key, 0});
         it != p.stack_samples.end() && it->first.sample == key; ++it) {
      if (it->first.stack == 0 || it->first.stack > p.stacks.size()) continue;
      const uint64_t n = std::min(it->second, count - done);
      if (!n) break;
      fn(key, ExpandStack(key, p.stacks[it->first.stack - 1], symbolizer), n);
      done += n;
    }
    for (auto it = p.caller_edges.lower_bound({key, 0});
         done < count && it != p.caller_edges.end() && it->first.sample == key; ++it) {
      const uint64_t n = std::min(it->second, count - done);
      frames = {{key.ip, key.user(), false, key.space_id},
                {it->first.caller, key.user(), true, key.space_id}};
      fn(key, frames, n);
      done += n;
    }
    if (done < count) {
      frames = {{key.ip, key.user(), false, key.space_id}};
      fn(key, frames, count - done);
    }
  }
}

}  // namespace tprof
