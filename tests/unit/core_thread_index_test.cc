// kmod/core/thread_index.c under ASan/UBSan, against a model: random thread
// churn never loses a key, never maps two keys to one slot, and removals
// leave no tombstone chain that a later lookup must walk forever (tombstones
// followed by an empty entry are reclaimed).
#include "core/thread_index.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

namespace {

struct Index {
  explicit Index(uint32_t capacity)
      : hash(tprof_thread_index_hash_size(capacity)), entries(hash), spare(hash), next_free(capacity) {
    tprof_thread_index_init(&ti, entries.data(), hash, next_free.data(), capacity);
  }
  // What the kernel does when tombstones pile up (the grace period aside).
  void MaybeRehash() {
    if (!tprof_thread_index_needs_rehash(&ti)) return;
    std::vector<tprof_ti_entry>& fresh = ti.hash == entries.data() ? spare : entries;
    tprof_ti_entry* old = tprof_thread_index_rehash(&ti, fresh.data());
    std::vector<tprof_ti_entry>& was = old == entries.data() ? entries : spare;
    std::fill(was.begin(), was.end(), tprof_ti_entry{});
    ++rehashes;
  }
  uint32_t hash;
  std::vector<tprof_ti_entry> entries, spare;
  std::vector<uint32_t> next_free;
  int rehashes = 0;
  tprof_thread_index ti;
};

TEST(CoreThreadIndex, RandomChurnMatchesModel) {
  constexpr uint32_t kCapacity = 64;
  Index ix(kCapacity);
  std::mt19937_64 rng(42);
  std::map<u64, uint32_t> live;  // key -> slot
  u64 next_key = 1;
  for (int step = 0; step < 200000; ++step) {
    if (rng() % 2 == 0) {
      u64 key = (next_key++) << 12;
      bool existed = true;
      uint32_t s = tprof_thread_index_insert(&ix.ti, key, &existed);
      if (live.size() == kCapacity) {
        ASSERT_EQ(s, TPROF_TI_NONE) << "more slots than the capacity";
        continue;
      }
      ASSERT_NE(s, TPROF_TI_NONE);
      ASSERT_FALSE(existed);
      for (const auto& [k, slot] : live) ASSERT_NE(slot, s) << "slot handed out twice";
      live[key] = s;
      bool again = false;
      ASSERT_EQ(tprof_thread_index_insert(&ix.ti, key, &again), s);
      ASSERT_TRUE(again);
    } else if (!live.empty()) {
      auto it = std::next(live.begin(), long(rng() % live.size()));
      tprof_thread_index_remove(&ix.ti, it->first);
      ASSERT_EQ(tprof_thread_index_lookup(&ix.ti, it->first), TPROF_TI_NONE);
      tprof_thread_index_release(&ix.ti, it->second);
      live.erase(it);
      ix.MaybeRehash();
    }
    if (step % 1000 == 0) {
      for (const auto& [k, slot] : live) ASSERT_EQ(tprof_thread_index_lookup(&ix.ti, k), slot);
    }
  }
  EXPECT_EQ(ix.ti.used, live.size());
  // Tombstones never fill more than a quarter of the hash, so a miss stops
  // at an empty entry soon; rehashes are rare next to the removals.
  EXPECT_LE(ix.ti.tombstones, ix.hash / 4);
  EXPECT_GT(ix.rehashes, 0);
  EXPECT_LT(ix.rehashes, 100000 / 16);
}

uint32_t CountTombstones(const tprof_ti_entry* hash, uint32_t size) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < size; ++i) n += hash[i].key == TPROF_TI_TOMBSTONE;
  return n;
}

// The kernel rehashes a bounded number of entries per step, its lock
// dropped between steps (IRQs back on): random inserts and removals between
// every two steps never lose a key, never show a removed one, and the
// published array holds exactly the live keys, its tombstone count exact.
TEST(CoreThreadIndex, IncrementalRehashWithWritersBetweenStepsMatchesModel) {
  constexpr uint32_t kCapacity = 64;
  Index ix(kCapacity);
  std::mt19937_64 rng(4242);
  std::map<u64, uint32_t> live;
  u64 next_key = 1;
  int published = 0;
  bool rehashing = false;
  for (int step = 0; step < 200000; ++step) {
    if (rehashing) {
      tprof_ti_entry* old = tprof_thread_index_rehash_step(&ix.ti, 1 + uint32_t(rng() % 5));
      if (old) {
        rehashing = false;
        ++published;
        std::vector<tprof_ti_entry>& was = old == ix.entries.data() ? ix.entries : ix.spare;
        std::fill(was.begin(), was.end(), tprof_ti_entry{});
        uint32_t keys = 0;
        for (uint32_t i = 0; i < ix.hash; ++i) {
          const u64 k = ix.ti.hash[i].key;
          if (k == 0 || k == TPROF_TI_TOMBSTONE) continue;
          ++keys;
          ASSERT_EQ(live.count(k), 1u) << "a removed key was published";
          ASSERT_EQ(ix.ti.hash[i].slot, live[k]);
        }
        ASSERT_EQ(keys, live.size()) << "a key was lost or copied twice";
        ASSERT_EQ(ix.ti.tombstones, CountTombstones(ix.ti.hash, ix.hash));
      } else {
        ASSERT_FALSE(tprof_thread_index_needs_rehash(&ix.ti)) << "one rehash at a time";
      }
    } else if (tprof_thread_index_needs_rehash(&ix.ti)) {
      std::vector<tprof_ti_entry>& fresh = ix.ti.hash == ix.entries.data() ? ix.spare : ix.entries;
      tprof_thread_index_rehash_begin(&ix.ti, fresh.data());
      rehashing = true;
    }
    if (rng() % 10 < 6) {  // inserts outnumber removals: the table runs full
      const u64 key = (rng() % 4 == 0 && !live.empty())
                          ? std::next(live.begin(), long(rng() % live.size()))->first
                          : (next_key++) << 12;
      bool existed = false;
      const uint32_t s = tprof_thread_index_insert(&ix.ti, key, &existed);
      if (live.count(key)) {
        ASSERT_TRUE(existed);
        ASSERT_EQ(s, live[key]);
      } else if (live.size() == kCapacity) {
        ASSERT_EQ(s, TPROF_TI_NONE);
      } else {
        ASSERT_NE(s, TPROF_TI_NONE);
        live[key] = s;
      }
    } else if (!live.empty()) {
      auto it = std::next(live.begin(), long(rng() % live.size()));
      tprof_thread_index_remove(&ix.ti, it->first);
      tprof_thread_index_release(&ix.ti, it->second);
      live.erase(it);
    }
    for (const auto& [k, slot] : live) ASSERT_EQ(tprof_thread_index_lookup(&ix.ti, k), slot);
  }
  EXPECT_GT(published, 10);
}

TEST(CoreThreadIndex, RemovingEverythingLeavesNoTombstone) {
  Index ix(32);
  std::vector<u64> keys;
  for (u64 k = 1; k <= 32; ++k) {
    bool existed;
    ASSERT_NE(tprof_thread_index_insert(&ix.ti, k * 4096, &existed), TPROF_TI_NONE);
    keys.push_back(k * 4096);
  }
  std::shuffle(keys.begin(), keys.end(), std::mt19937_64(7));
  for (u64 k : keys) tprof_thread_index_remove(&ix.ti, k);
  EXPECT_EQ(ix.ti.tombstones, 0u);
  for (const tprof_ti_entry& e : ix.entries) EXPECT_EQ(e.key, 0u);
}

TEST(CoreThreadIndex, TcumAddReportsTheZeroToNonzeroTransitionOnly) {
  u64 tcum[2] = {0, 0};
  u64 zero[2] = {0, 0}, d[2] = {5, 0};
  EXPECT_FALSE(tprof_tcum_add(tcum, zero, 2));
  EXPECT_TRUE(tprof_tcum_add(tcum, d, 2));
  EXPECT_FALSE(tprof_tcum_add(tcum, d, 2));
  EXPECT_EQ(tcum[0], 10u);
  EXPECT_FALSE(tprof_tcum_is_zero(tcum, 2));
}

}  // namespace
