// The double-buffer protocol (kmod/core/sample_buffer.c) driven as writer
// and reader against a random schedule: every sample is either delivered
// or counted lost, LOST records add up, halves arrive in publication order.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/sample_buffer.h"

namespace {

TEST(CoreSampleBuffer, RandomScheduleLosesNothingUncounted) {
  constexpr uint32_t kHalf = 512;
  tprof_buffer_ctl ctl{};
  std::vector<uint8_t> halves(2 * kHalf);
  tprof_sbuf_writer w;
  tprof_sbuf_init(&w, &ctl, halves.data(), kHalf);
  std::mt19937 rng(42);
  uint64_t delivered = 0, lost_in_records = 0, next_seq = 0, next_tag = 0;

  auto consume = [&](uint32_t half) {
    ASSERT_EQ(ctl.seq[half], next_seq++) << "halves out of order";
    size_t off = 0;
    while (off < ctl.used[half]) {
      auto* h = reinterpret_cast<tprof_rec_header*>(&halves[half * kHalf + off]);
      ASSERT_GE(h->size, sizeof(tprof_rec_header));
      if (h->type == TPROF_REC_LOST)
        lost_in_records += reinterpret_cast<tprof_rec_lost*>(h)->lost_samples;
      else
        ++delivered;
      off += h->size;
    }
    ASSERT_EQ(tprof_sbuf_release(&ctl, half), 0);
  };
  auto consume_all = [&] {
    for (;;) {
      bool f0 = ctl.full[0], f1 = ctl.full[1];
      if (!f0 && !f1) break;
      consume(f0 && f1 ? (ctl.seq[0] < ctl.seq[1] ? 0 : 1) : (f0 ? 0 : 1));
    }
  };
  for (int step = 0; step < 20000; ++step) {
    if (rng() % 4 != 0) {
      uint32_t size = 8 * (2 + rng() % 8);
      auto* h = static_cast<tprof_rec_header*>(tprof_sbuf_reserve(&w, size, true, step));
      if (h) {
        h->type = TPROF_REC_SAMPLE;
        h->size = size;
        ++next_tag;
      }
    } else if (rng() % 3 == 0) {
      consume_all();
    }
  }
  tprof_sbuf_flush(&w, 0);
  for (int i = 0; i < 4; ++i) {
    consume_all();
    tprof_sbuf_flush(&w, 0);  // a stalled writer owes a LOST record
  }
  consume_all();
  EXPECT_EQ(delivered, next_tag);
  EXPECT_EQ(delivered + ctl.lost_samples, ctl.samples_taken);
  EXPECT_GT(ctl.lost_samples, 0u) << "the schedule should overflow sometimes";
  EXPECT_EQ(lost_in_records, ctl.lost_samples);
}

}  // namespace
