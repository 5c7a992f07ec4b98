// The recorder's reduction on the host: ProfileBuilder::AddRecords fed
// synthetic halves shaped like bench/sampling_bench's section 4 (one
// process on one CPU at 10 kHz, a handful of sampled addresses at the
// bottom of a 32-frame recursion, each sample with its whole stack, some
// samples in the kernel). It isolates the part of `tprofctl record -g`'s
// per-sample cost that is ours from the event loop and the kernel, and
// needs no guest. Instructions are what to read (exact), e.g.
//   valgrind --tool=callgrind --toggle-collect='tprof::ProfileBuilder::AddRecords*'
//     build/bench/tprof_reduce_bench
// (one command line) and Ir / samples; the wall time it prints moves with the host's load.
//
//   tprof_reduce_bench [--samples N] [--frames N] [--hz N] [--no-context]
#include <linux/tprof.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tprof/analysis/profile.h"

namespace {

constexpr size_t kHalfBytes = 64 * 1024;  // tprofctl record's default
constexpr uint32_t kPid = 4242;
constexpr uint64_t kSpace = 0x5eed5eed5eed5eedull;
uint64_t g_period_ns = 100'000;  // 10 kHz unless --hz

// A published half: records back to back, 8-byte aligned.
struct Half {
  std::vector<uint64_t> words;
  size_t bytes = 0;
};

// Appends one sample with its stack; false if the half is full.
bool AppendSample(Half* h, const tprof_rec_sample& s, const tprof_rec_stack& st,
                  const std::vector<uint64_t>& frames) {
  const size_t size = sizeof(s) + sizeof(st) + frames.size() * sizeof(uint64_t);
  if (h->bytes + size > kHalfBytes) return false;
  h->words.resize((h->bytes + size) / 8);
  auto* p = reinterpret_cast<unsigned char*>(h->words.data()) + h->bytes;
  tprof_rec_sample rec = s;
  rec.hdr = {TPROF_REC_SAMPLE, static_cast<uint32_t>(size)};
  std::memcpy(p, &rec, sizeof(rec));
  std::memcpy(p + sizeof(rec), &st, sizeof(st));
  if (!frames.empty())
    std::memcpy(p + sizeof(rec) + sizeof(st), frames.data(), frames.size() * sizeof(uint64_t));
  h->bytes += size;
  return true;
}

// The sampled stream: mostly user-mode samples in the work loop (a few
// addresses), every 50th in the kernel (the chunk's syscall) with a kernel
// part and the user ip it entered from.
std::vector<Half> MakeHalves(long samples, int frames) {
  std::vector<uint64_t> chain;  // leaf RA, then Deep() x frames, main, libc
  chain.push_back(0x7ffd0000aa10ull);  // the word at the user sp
  for (int i = 0; i < frames; ++i) chain.push_back(0x401280 + (i == frames - 1 ? 0x40 : 0));
  for (uint64_t ra : {0x4013a0ull, 0x401500ull, 0x7f0000029d90ull, 0x7f0000029e40ull})
    chain.push_back(ra);
  std::vector<uint64_t> kchain = {0xffffffff81a00010ull, 0xffffffff81a00120ull,
                                  0xffffffff81b00230ull, 0xffffffff81c00340ull,
                                  0xffffffff81c00450ull, 0xffffffff82000060ull};
  std::vector<Half> halves(1);
  for (long i = 0; i < samples; ++i) {
    tprof_rec_sample s{};
    s.time_ns = 1'000'000'000 + uint64_t(i) * g_period_ns;
    s.pid = s.tid = kPid;
    s.space_id = kSpace;
    tprof_rec_stack st{};
    std::vector<uint64_t> f;
    if (i % 50 == 49) {
      s.ip = kchain[0] + 0x20;
      s.flags = TPROF_SAMPLE_STACK;
      st.flags = TPROF_STACK_USER_IP | TPROF_STACK_LEAF_RA;
      st.nr_kernel = static_cast<uint16_t>(kchain.size());
      f = kchain;
      f.push_back(0x401210);  // the syscall's user ip
      f.insert(f.end(), chain.begin(), chain.end());
      st.nr_user = static_cast<uint16_t>(1 + chain.size());
    } else {
      // The loop's few instructions, in a fixed rotation.
      s.ip = 0x401100 + 4 * uint64_t(i % 7);
      s.flags = TPROF_SAMPLE_USER | TPROF_SAMPLE_STACK;
      st.flags = TPROF_STACK_LEAF_RA;
      st.nr_user = static_cast<uint16_t>(chain.size());
      f = chain;
    }
    if (!AppendSample(&halves.back(), s, st, f)) {
      halves.emplace_back();
      AppendSample(&halves.back(), s, st, f);
    }
  }
  return halves;
}

}  // namespace

int main(int argc, char** argv) {
  long samples = 100'000;
  int frames = 32;
  bool context = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--samples" && i + 1 < argc)
      samples = std::atol(argv[++i]);
    else if (a == "--frames" && i + 1 < argc)
      frames = std::atoi(argv[++i]);
    else if (a == "--hz" && i + 1 < argc)
      g_period_ns = 1'000'000'000 / std::max(1L, std::atol(argv[++i]));
    else if (a == "--no-context")
      context = false;
    else {
      std::fprintf(stderr, "usage: tprof_reduce_bench [--samples N] [--frames N] [--hz N] [--no-context]\n");
      return 2;
    }
  }
  const std::vector<Half> halves = MakeHalves(samples, frames);
  tprof::ContextOptions options;
  if (!context) options.granularity_ns = 0;
  tprof::ProfileBuilder builder(options);
  const auto t0 = std::chrono::steady_clock::now();
  for (const Half& h : halves) builder.AddRecords(h.words.data(), h.bytes);
  const auto t1 = std::chrono::steady_clock::now();
  tprof::Profile p = builder.Finish();
  const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
  std::printf("%ld samples in %zu halves (%d frames deep): %.0f ns a sample; %zu samples, "
              "%zu stacks, %zu context entries\n",
              samples, halves.size(), frames, ns / double(samples), p.samples.size(),
              p.stacks.size(), p.contexts.size());
  return p.TotalSamples() == uint64_t(samples) ? 0 : 1;
}
