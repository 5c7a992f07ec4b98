#include "analysis/profile_file_stacks.h"

#include <algorithm>
#include <numeric>
#include <tuple>
#include <utility>

namespace tprof {
namespace {

// Addresses per `addr` line.
constexpr size_t kAddressesPerLine = 64;

// A stack's entries from the outermost: its user part's last first, its
// kernel part's first last.
std::vector<uint64_t> OutermostFirst(const RawStack& s) {
  std::vector<uint64_t> out(s.user.rbegin(), s.user.rend());
  out.insert(out.end(), s.kernel.rbegin(), s.kernel.rend());
  return out;
}

}  // namespace

Profile WithStacksInFileOrder(const Profile& p) {
  std::vector<std::vector<uint64_t>> frames;
  frames.reserve(p.stacks.size());
  for (const RawStack& s : p.stacks) frames.push_back(OutermostFirst(s));
  std::vector<uint32_t> order(p.stacks.size());  // file position -> old index
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return std::tie(frames[a], p.stacks[a].space_id, p.stacks[a].flags, p.stacks[a].kernel) <
           std::tie(frames[b], p.stacks[b].space_id, p.stacks[b].flags, p.stacks[b].kernel);
  });
  std::vector<uint32_t> new_id(p.stacks.size() + 1, 0);  // old id -> new id (0: none)
  for (uint32_t i = 0; i < order.size(); ++i) new_id[order[i] + 1] = i + 1;
  auto renumber = [&](uint32_t id) { return id < new_id.size() ? new_id[id] : id; };

  Profile q = p;
  q.stacks.clear();
  q.stack_samples.clear();
  q.contexts.clear();
  q.stacks.reserve(p.stacks.size());
  for (uint32_t old : order) q.stacks.push_back(p.stacks[old]);
  for (const auto& [k, count] : p.stack_samples) q.stack_samples[{k.sample, renumber(k.stack)}] += count;
  for (const auto& [k, count] : p.contexts) {
    SampleContextKey key = k;
    key.stack = renumber(k.stack);
    q.contexts[key] += count;
  }
  return q;
}

void WriteStacks(const Profile& p, LineWriter& w) {
  std::vector<uint64_t> addresses;
  for (const RawStack& s : p.stacks) {
    addresses.insert(addresses.end(), s.kernel.begin(), s.kernel.end());
    addresses.insert(addresses.end(), s.user.begin(), s.user.end());
  }
  for (const auto& [k, count] : p.stack_samples) addresses.push_back(k.sample.ip);
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  auto index = [&](uint64_t a) {
    return static_cast<uint32_t>(std::lower_bound(addresses.begin(), addresses.end(), a) -
                                 addresses.begin());
  };
  for (size_t i = 0; i < addresses.size(); i += kAddressesPerLine) {
    w.Tag("addr");
    for (size_t j = i; j < std::min(addresses.size(), i + kAddressesPerLine); ++j)
      w.Hex(addresses[j] - (j ? addresses[j - 1] : 0));
    w.End();
  }
  std::vector<uint32_t> last;
  for (const RawStack& s : p.stacks) {
    std::vector<uint32_t> frames;
    for (uint64_t a : OutermostFirst(s)) frames.push_back(index(a));
    size_t shared = 0;
    while (shared < std::min(frames.size(), last.size()) && frames[shared] == last[shared]) ++shared;
    w.Tag("stk").Hex(s.flags).Hex(s.space_id).Dec(s.kernel.size()).Dec(s.user.size()).Dec(shared);
    for (size_t i = shared; i < frames.size(); ++i) w.Dec(frames[i]);
    w.End();
    last = std::move(frames);
  }
  // The samples per stack, by (process, space, flags), then address.
  struct Row {
    SampleKey group;  // ip 0
    uint32_t index, stack;
    uint64_t count;
  };
  std::vector<Row> rows;
  rows.reserve(p.stack_samples.size());
  for (const auto& [k, count] : p.stack_samples)
    rows.push_back({{k.sample.pid, k.sample.space_id, 0, k.sample.flags}, index(k.sample.ip), k.stack,
                    count});
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return std::tie(a.group, a.index, a.stack) < std::tie(b.group, b.index, b.stack);
  });
  const Row* prev = nullptr;
  for (const Row& r : rows) {
    if (!prev || prev->group != r.group) {
      w.Tag("sskey").Dec(r.group.pid).Hex(r.group.space_id).Hex(r.group.flags).End();
      prev = nullptr;
    }
    w.Tag("ss").Dec(r.index - (prev ? prev->index : 0)).Dec(r.stack).Dec(r.count).End();
    prev = &r;
  }
}

LineResult ParseStackLine(LineReader& r, Profile* p, StackLinesState* st) {
  const std::string_view tag = r.tag();
  if (tag == "addr") {
    uint64_t a = st->addresses.empty() ? 0 : st->addresses.back();
    if (r.size() > kAddressesPerLine + 1) return LineResult::kMalformed;
    for (size_t i = 1; i < r.size(); ++i) st->addresses.push_back(a += r.Hex(i));
  } else if (tag == "stk") {
    RawStack s;
    s.flags = static_cast<uint32_t>(r.Hex(1));
    s.space_id = r.Hex(2);
    const uint64_t nk = r.Dec(3), nu = r.Dec(4), shared = r.Dec(5);
    // The bounds keep a corrupt line from allocating much.
    if (r.size() < 6 || shared > st->last_frames.size() || nk + nu != shared + (r.size() - 6) ||
        nk + nu > 4 * (TPROF_MAX_STACK_DEPTH + 2))
      return LineResult::kMalformed;
    st->last_frames.resize(shared);
    for (size_t i = 6; i < r.size(); ++i) {
      const uint64_t index = r.Dec(i);
      if (index >= st->addresses.size()) return LineResult::kMalformed;
      st->last_frames.push_back(static_cast<uint32_t>(index));
    }
    for (size_t i = st->last_frames.size(); i-- > 0;) {
      const uint64_t a = st->addresses[st->last_frames[i]];
      (s.kernel.size() < nk ? s.kernel : s.user).push_back(a);
    }
    p->stacks.push_back(std::move(s));
  } else if (tag == "sskey") {
    st->group = {r.Dec32(1), r.Hex(2), 0, static_cast<uint32_t>(r.Hex(3))};
    st->in_group = true;
    st->last_index = 0;
  } else if (tag == "ss") {
    const uint64_t index = st->last_index + r.Dec(1);
    StackSampleKey key{st->group, r.Dec32(2)};
    if (!st->in_group || index >= st->addresses.size() || key.stack == 0 ||
        key.stack > p->stacks.size())
      return LineResult::kMalformed;
    key.sample.ip = st->addresses[index];
    p->stack_samples[key] += r.Dec(3);
    st->last_index = index;
  } else {
    return LineResult::kNotMine;
  }
  return r.ok() ? LineResult::kOk : LineResult::kMalformed;
}

}  // namespace tprof
