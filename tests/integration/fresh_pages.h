// Fresh anonymous pages for tests that count page faults: not populated,
// no huge pages, so touching each page is exactly one fault.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

struct FreshPages {
  explicit FreshPages(long pages) : n(pages) {
    base = static_cast<char*>(::mmap(nullptr, bytes(), PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base != MAP_FAILED) ::madvise(base, bytes(), MADV_NOHUGEPAGE);
  }
  ~FreshPages() {
    if (base != MAP_FAILED) ::munmap(base, bytes());
  }
  FreshPages(const FreshPages&) = delete;
  FreshPages& operator=(const FreshPages&) = delete;

  static long PageSize() { return ::sysconf(_SC_PAGESIZE); }
  long bytes() const { return n * PageSize(); }
  uint64_t addr() const { return reinterpret_cast<uintptr_t>(base); }

  char* base;
  long n;
};
