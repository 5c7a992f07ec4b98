// A sampling session's records, flattened, for tests that check what a
// session delivered (sampling_safety_test.cc, exec_safety_test.cc).
#pragma once

#include <linux/tprof.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "guest_env.h"
#include "tprof/device/sampling.h"

namespace tprof::test {

// One record, flattened.
struct Rec {
  uint32_t type = 0, pid = 0, parent_pid = 0, kind = 0, flags = 0;
  uint64_t time_ns = 0, ip = 0;
  std::string text;  // comm or map path
};

// Stops the session and returns every record it delivered; empty + *ok =
// false if the session misbehaved.
inline std::vector<Rec> StopAndDrain(SamplingSession& s, bool* ok) {
  std::vector<Rec> out;
  *ok = bool(s.Stop());
  auto fn = [&](uint32_t, const tprof_rec_header* h, size_t) {
    Rec r;
    r.type = h->type;
    switch (h->type) {
      case TPROF_REC_SAMPLE: {
        auto* x = reinterpret_cast<const tprof_rec_sample*>(h);
        r.pid = x->pid, r.time_ns = x->time_ns, r.flags = x->flags, r.ip = x->ip;
        break;
      }
      case TPROF_REC_COMM: {
        auto* x = reinterpret_cast<const tprof_rec_comm*>(h);
        r.pid = x->pid, r.time_ns = x->time_ns, r.parent_pid = x->parent_pid, r.kind = x->kind;
        r.text.assign(x->comm, strnlen(x->comm, sizeof(x->comm)));
        break;
      }
      case TPROF_REC_EXIT: {
        auto* x = reinterpret_cast<const tprof_rec_exit*>(h);
        r.pid = x->pid, r.time_ns = x->time_ns, r.flags = x->flags;
        break;
      }
      case TPROF_REC_MAP: {
        auto* x = reinterpret_cast<const tprof_rec_map*>(h);
        r.pid = x->pid, r.time_ns = x->time_ns;
        r.text.assign(reinterpret_cast<const char*>(x + 1), strnlen(reinterpret_cast<const char*>(x + 1), h->size - sizeof(*x)));
        break;
      }
      default:
        break;
    }
    out.push_back(r);
    return true;
  };
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (*ok && !s.Finished() && std::chrono::steady_clock::now() < deadline)
    *ok = bool(s.Consume(fn)) && bool(s.Wait(100));  // returns when records or the hangup come
  *ok = *ok && s.Finished();
  return out;
}

}  // namespace tprof::test
