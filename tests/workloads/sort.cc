// tprof-wl-sort: std::sort with a comparator, the whole program built -O2
// without frame pointers, as Debian builds C++ (the stack tests of
// `record -g`).
//
//   tprof-wl-sort [--ms TOTAL_MS]   (default 2000 ms of CPU)
//
// main -> cx_sort -> std::sort's template code (std::__introsort_loop and
// the insertion sort, instantiated here, frameless) -> cx_less, a
// comparator that burns: the samples in cx_less must reach cx_sort and
// main through std::sort's frames.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace {

struct Item {
  uint64_t key;
  uint64_t pad;
};

volatile uint64_t cx_sink;

uint64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace

// Extern and not inlined: the names the test looks for.
__attribute__((noinline)) bool cx_less(const Item& a, const Item& b) {
  uint64_t x = a.key, y = b.key;
  for (int i = 0; i < 64; i++) {  // the burn: most samples land here
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    y = y * 6364136223846793005ull + 1442695040888963407ull;
  }
  cx_sink = cx_sink + (x ^ y);
  return a.key < b.key;
}

__attribute__((noinline)) void cx_sort(std::vector<Item>& v, uint64_t seed) {
  for (Item& it : v) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    it.key = seed >> 11;
  }
  std::sort(v.begin(), v.end(), cx_less);
}

int main(int argc, char** argv) {
  unsigned long ms = 2000;
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--ms") == 0 && i + 1 < argc) {
      ms = std::strtoul(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: tprof-wl-sort [--ms TOTAL_MS]\n");
      return 2;
    }
  }
  std::vector<Item> v(4096);
  const uint64_t until = ThreadCpuNs() + uint64_t(ms) * 1000000ull;
  uint64_t rounds = 0;
  while (ThreadCpuNs() < until) cx_sort(v, ++rounds);
  std::printf("tprof-wl-sort: %llu sorts\n", static_cast<unsigned long long>(rounds));
  return 0;
}
