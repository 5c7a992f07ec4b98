// The fuzzer's random numbers: splitmix64, reproducible from --seed. Each
// user passes its own stream constant, so the workers and the scenes drawn
// from one seed do not repeat each other's choices.
#pragma once

#include <cstdint>
#include <initializer_list>

namespace tprof_fuzz {

struct Rng {
  using u64 = unsigned long long;
  u64 s;
  Rng(u64 seed, u64 stream) : s(seed * 0x9E3779B97F4A7C15ULL + stream) {}
  u64 Next() {
    u64 z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  u64 Below(u64 n) { return n ? Next() % n : 0; }
  bool OneIn(u64 n) { return Below(n) == 0; }
  template <typename T>
  T Pick(std::initializer_list<T> l) {
    return *(l.begin() + Below(l.size()));
  }
  // Boundary-heavy 64-bit values.
  u64 Edgy() {
    switch (Below(8)) {
      case 0: return 0;
      case 1: return 1;
      case 2: return ~0ULL;
      case 3: return 1ULL << Below(64);
      case 4: return (1ULL << Below(64)) - 1;
      case 5: return 0xffffffffULL;
      case 6: return Below(4096);
      default: return Next();
    }
  }
};

// The streams (the constants the generators had before they shared this).
constexpr unsigned long long kWorkerStream = 0x632BE59BD9B4E019ULL;
constexpr unsigned long long kSceneStream = 0x2545F4914F6CDD1DULL;

}  // namespace tprof_fuzz
