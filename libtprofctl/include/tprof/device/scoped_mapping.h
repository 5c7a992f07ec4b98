// A shared memory mapping of /dev/tprof (sampling buffers, a self page),
// unmapped exactly once.
#ifndef TPROF_SCOPED_MAPPING_H_
#define TPROF_SCOPED_MAPPING_H_

#include <cstddef>
#include <cstdint>

namespace tprof {

class ScopedMapping {
 public:
  ScopedMapping() = default;
  ScopedMapping(void* addr, size_t len) : addr_(addr), len_(len) {}
  ~ScopedMapping();
  ScopedMapping(ScopedMapping&& o) noexcept;
  ScopedMapping& operator=(ScopedMapping&& o) noexcept;
  ScopedMapping(const ScopedMapping&) = delete;
  ScopedMapping& operator=(const ScopedMapping&) = delete;
  const uint8_t* data() const { return static_cast<const uint8_t*>(addr_); }
  size_t size() const { return len_; }
  // Forgets the mapping without unmapping it (a forked child, where the
  // range was not inherited and may hold something else by now).
  void Abandon() {
    addr_ = nullptr;
    len_ = 0;
  }

 private:
  void* addr_ = nullptr;
  size_t len_ = 0;
};

}  // namespace tprof

#endif  // TPROF_SCOPED_MAPPING_H_
