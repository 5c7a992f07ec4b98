// Builds sampling-buffer records by hand for the profile, symbolizer and
// report tests: a Records buffer is what one published half holds.
#ifndef TPROF_TESTS_COMMON_RECORDS_H_
#define TPROF_TESTS_COMMON_RECORDS_H_

#include <linux/tprof.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tprof::test {

inline tprof_rec_sample SampleRec(uint32_t pid, uint64_t space_id, uint64_t ip, uint32_t flags,
                                  uint32_t cpu = 0, uint64_t caller = 0, uint64_t time_ns = 1) {
  tprof_rec_sample s{};
  s.hdr = {TPROF_REC_SAMPLE, sizeof(s)};
  s.time_ns = time_ns;
  s.pid = pid;
  s.tid = pid;
  s.ip = ip;
  s.caller = caller;
  s.space_id = space_id;
  s.flags = flags | (caller ? TPROF_SAMPLE_CALLER : 0);
  s.cpu = cpu;
  return s;
}

inline tprof_rec_comm CommRec(uint32_t pid, uint32_t kind, const char* name, uint32_t parent = 0,
                              uint64_t time_ns = 0) {
  tprof_rec_comm c{};
  c.hdr = {TPROF_REC_COMM, sizeof(c)};
  c.time_ns = time_ns;
  c.pid = pid;
  c.parent_pid = parent;
  c.kind = kind;
  // NUL-padded; a 16-character name has no NUL, as in the kernel's record.
  std::memcpy(c.comm, name, std::min(std::strlen(name), sizeof(c.comm)));
  return c;
}

inline tprof_rec_exit ExitRec(uint32_t pid, uint64_t time_ns) {
  tprof_rec_exit e{};
  e.hdr = {TPROF_REC_EXIT, sizeof(e)};
  e.time_ns = time_ns;
  e.pid = pid;
  return e;
}

inline tprof_rec_lost LostRec(uint64_t samples, uint64_t records) {
  tprof_rec_lost l{};
  l.hdr = {TPROF_REC_LOST, sizeof(l)};
  l.lost_samples = samples;
  l.lost_records = records;
  return l;
}

inline tprof_rec_idle IdleRec(uint32_t cpu, uint32_t idle, uint32_t iowait) {
  tprof_rec_idle i{};
  i.hdr = {TPROF_REC_IDLE, sizeof(i)};
  i.cpu = cpu;
  i.idle_ticks = idle;
  i.iowait_ticks = iowait;
  return i;
}

// An 8-byte aligned buffer of records.
class Records {
 public:
  template <typename T>
  Records& Add(const T& rec) {
    Append(&rec, sizeof(rec));
    return *this;
  }
  // The same record n times (n samples at one address).
  template <typename T>
  Records& AddN(int n, const T& rec) {
    for (int i = 0; i < n; ++i) Add(rec);
    return *this;
  }
  Records& Map(uint32_t pid, uint64_t space_id, uint64_t start, uint64_t end, uint64_t pgoff,
               const std::string& path) {
    tprof_rec_map m{};
    size_t path_bytes = (path.size() + 1 + 7) / 8 * 8;
    m.hdr = {TPROF_REC_MAP, static_cast<uint32_t>(sizeof(m) + path_bytes)};
    m.pid = pid;
    m.space_id = space_id;
    m.start = start;
    m.end = end;
    m.pgoff = pgoff;
    std::vector<char> bytes(sizeof(m) + path_bytes, '\0');
    std::memcpy(bytes.data(), &m, sizeof(m));
    std::memcpy(bytes.data() + sizeof(m), path.data(), path.size());
    Append(bytes.data(), bytes.size());
    return *this;
  }
  // A sample with its stack (TPROF_SAMPLE_STACK, struct tprof_rec_stack).
  Records& StackSample(tprof_rec_sample s, uint32_t stack_flags, const std::vector<uint64_t>& kernel,
                       const std::vector<uint64_t>& user) {
    tprof_rec_stack st{};
    st.nr_kernel = static_cast<uint16_t>(kernel.size());
    st.nr_user = static_cast<uint16_t>(user.size());
    st.flags = stack_flags;
    s.flags |= TPROF_SAMPLE_STACK;
    s.hdr.size = static_cast<uint32_t>(sizeof(s) + sizeof(st) + 8 * (kernel.size() + user.size()));
    Append(&s, sizeof(s));
    Append(&st, sizeof(st));
    if (!kernel.empty()) Append(kernel.data(), 8 * kernel.size());
    if (!user.empty()) Append(user.data(), 8 * user.size());
    return *this;
  }
  // Raw bytes, e.g. a malformed header.
  Records& Raw(const void* data, size_t n) {
    Append(data, n);
    return *this;
  }

  const void* data() const { return words_.data(); }
  size_t size() const { return bytes_; }
  const tprof_rec_header* at(size_t offset) const {
    return reinterpret_cast<const tprof_rec_header*>(
        reinterpret_cast<const unsigned char*>(words_.data()) + offset);
  }

 private:
  void Append(const void* data, size_t n) {
    words_.resize((bytes_ + n + 7) / 8);
    std::memcpy(reinterpret_cast<unsigned char*>(words_.data()) + bytes_, data, n);
    bytes_ += n;
  }

  std::vector<uint64_t> words_;
  size_t bytes_ = 0;
};

}  // namespace tprof::test

#endif  // TPROF_TESTS_COMMON_RECORDS_H_
