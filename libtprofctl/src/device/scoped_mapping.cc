#include "tprof/device/scoped_mapping.h"

#include <sys/mman.h>

#include <utility>

namespace tprof {

ScopedMapping::~ScopedMapping() {
  if (addr_) ::munmap(addr_, len_);
}

ScopedMapping::ScopedMapping(ScopedMapping&& o) noexcept
    : addr_(std::exchange(o.addr_, nullptr)), len_(std::exchange(o.len_, 0)) {}

ScopedMapping& ScopedMapping::operator=(ScopedMapping&& o) noexcept {
  if (this != &o) {
    if (addr_) ::munmap(addr_, len_);
    addr_ = std::exchange(o.addr_, nullptr);
    len_ = std::exchange(o.len_, 0);
  }
  return *this;
}

}  // namespace tprof
