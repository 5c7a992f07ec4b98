// kmod/core/thread_table.c under ASan/UBSan, against a simple model: random
// thread churn, accounting and partial consumption never lose or invent a
// value, and the nonzero list holds exactly the nonzero or exited threads.
#include "core/thread_table.h"

#include <map>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace {

struct Model {
  uint64_t tcum = 0;
  bool exited = false;
};

TEST(CoreThreadTable, RandomChurnMatchesModel) {
  constexpr uint32_t kCapacity = 64;
  uint32_t hash = tprof_thread_table_hash_size(kCapacity);
  std::vector<tprof_thread_slot> slots(kCapacity);
  std::vector<u64> keys(hash);
  std::vector<uint32_t> idx(hash);
  tprof_thread_table t;
  tprof_thread_table_init(&t, slots.data(), kCapacity, keys.data(), idx.data(), hash, 1);

  std::mt19937_64 rng(42);
  std::map<uint64_t, Model> live;     // key -> model (not exited)
  std::map<uint64_t, Model> by_ident; // identity -> model, all tracked slots
  uint64_t next_key = 1, untracked = 0;
  for (int step = 0; step < 200000; ++step) {
    switch (rng() % 5) {
      case 0: {  // a new thread
        uint64_t key = (next_key++) << 12;
        tprof_thread_slot* s = tprof_thread_table_insert(&t, key, 1, 1, "t");
        if (!s) {
          ++untracked;
          break;
        }
        live[key] = Model{};
        by_ident[s->identity] = Model{};
        break;
      }
      case 1:
      case 2: {  // a thread runs
        if (live.empty()) break;
        auto it = std::next(live.begin(), long(rng() % live.size()));
        tprof_thread_slot* s = tprof_thread_table_lookup(&t, it->first);
        ASSERT_NE(s, nullptr);
        u64 d = rng() % 3;
        tprof_thread_table_account(&t, s, &d);
        by_ident[s->identity].tcum += d;
        break;
      }
      case 3: {  // a thread exits
        if (live.empty()) break;
        auto it = std::next(live.begin(), long(rng() % live.size()));
        tprof_thread_slot* s = tprof_thread_table_lookup(&t, it->first);
        ASSERT_NE(s, nullptr);
        by_ident[s->identity].exited = true;
        tprof_thread_table_exit(&t, s);
        EXPECT_EQ(tprof_thread_table_lookup(&t, it->first), nullptr);
        live.erase(it);
        break;
      }
      case 4: {  // a drain of the first few listed, sometimes partial
        uint32_t n = 0;
        for (uint32_t i = t.list_head; i != TPROF_TT_NONE && n < 4; ++n) {
          tprof_thread_slot* s = &t.slots[i];
          uint32_t next = s->list_next;
          tprof_thread_metrics rec;
          tprof_thread_table_fill(&t, s, &rec);
          Model& m = by_ident[rec.identity];
          ASSERT_EQ(rec.values[0], m.tcum) << "value invented or lost";
          ASSERT_EQ(rec.flags == TPROF_THREAD_EXITED, m.exited);
          u64 part = (rng() % 2) ? rec.values[0] : rec.values[0] / 2;
          tprof_thread_table_consume(&t, s, &part);
          m.tcum -= part;
          if (m.exited && m.tcum == 0) by_ident.erase(rec.identity);
          i = next;
        }
        break;
      }
    }
    if (HasFatalFailure()) return;
  }
  // The list holds exactly the nonzero or exited tracked threads.
  uint32_t listed = 0;
  for (uint32_t i = t.list_head; i != TPROF_TT_NONE; i = t.slots[i].list_next) ++listed;
  uint32_t expected = 0;
  for (const auto& [ident, m] : by_ident) expected += (m.tcum != 0 || m.exited);
  EXPECT_EQ(listed, expected);
  EXPECT_EQ(t.listed, expected);
  EXPECT_EQ(t.used, by_ident.size());
  EXPECT_EQ(t.untracked, untracked);
}

}  // namespace
