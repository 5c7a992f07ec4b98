// tprof_fuzz: the records of a sampling session's buffers, checked (well
// formed, of the session's processes, nothing of a kernel for an
// unprivileged reader) and counted into a session's books (Books, core.h).
#include "core.h"

#include <linux/tprof.h>

#include <atomic>
#include <cstring>
#include <utility>

namespace tprof_fuzz::core {

namespace {
std::atomic<u64> g_spaces[8];
std::atomic<unsigned> g_space_next{0};
}  // namespace

void NoteSpace(u64 space_id) {
  g_spaces[g_space_next.fetch_add(1, std::memory_order_relaxed) % 8].store(space_id, std::memory_order_relaxed);
}

u64 RecentSpace(Rng& r) { return g_spaces[r.Below(8)].load(std::memory_order_relaxed); }


// ---- records ------------------------------------------------------------------

namespace {

// The end of user addresses: x86-64's 47 bits; arm64's 48 (52 at most).
#if defined(__aarch64__)
constexpr u64 kUserEnd = 1ULL << 52;
#else
constexpr u64 kUserEnd = 0x0000800000000000ULL;
#endif

// A user stack copy (ABI 1.18) after a sample's frames, at `at` of a record
// of `size` bytes: the registers of a user task, a copy within the room it
// was given, nothing past the copy but zeros (no kernel bytes).
void CheckUserStackCopy(const char* rec, uint32_t at, uint32_t size) {
  tprof_rec_user_stack us;
  if (size < at + sizeof(us)) {
    VIOLATION("a user stack copy in a record of %u bytes, frames to %u", size, at);
    return;
  }
  std::memcpy(&us, rec + at, sizeof(us));
  if (size != at + sizeof(us) + us.asked || us.bytes > us.asked || us.bytes % 8 ||
      us.asked > TPROF_MAX_USER_STACK_BYTES) {
    VIOLATION("user stack copy of %u of %u bytes in a record of %u bytes, frames to %u", us.bytes,
              us.asked, size, at);
    return;
  }
  Count(us.bytes ? "sampling user stack copies" : "sampling user stack copies (empty)");
  if (us.pc >= kUserEnd || us.sp >= kUserEnd)
    VIOLATION("user stack copy from pc 0x%llx sp 0x%llx", us.pc, us.sp);
  const char* tail = rec + at + sizeof(us) + us.bytes;
  for (uint32_t i = 0; i < us.asked - us.bytes; i++)
    if (tail[i]) {
      VIOLATION("byte %u past a user stack copy of %u bytes is 0x%x", us.bytes + i, us.bytes,
                unsigned(uint8_t(tail[i])));
      return;
    }
}

// Checks and counts the records of CPU cpu's half (used bytes).
void ParseHalf(const char* base, uint32_t used, uint32_t half_bytes, uint32_t cpu, Books* books,
               uint32_t session_pid) {
  if (used > half_bytes) {
    VIOLATION("cpu %u: used %u > half_bytes %u", cpu, used, half_bytes);
    return;
  }
  uint32_t off = 0;
  while (off < used) {
    tprof_rec_header h;
    if (used - off < sizeof(h)) {
      VIOLATION("cpu %u: %u trailing bytes in a half", cpu, used - off);
      return;
    }
    std::memcpy(&h, base + off, sizeof(h));
    if (h.size < sizeof(h) || h.size % 8 || h.size > used - off) {
      VIOLATION("cpu %u: record type %u size %u at offset %u of %u used", cpu, h.type, h.size, off, used);
      return;
    }
    const char* p = base + off;
    static const uint32_t kMin[] = {0, sizeof(tprof_rec_sample), sizeof(tprof_rec_comm),
                                    sizeof(tprof_rec_exit), sizeof(tprof_rec_map) + 8,
                                    sizeof(tprof_rec_lost), sizeof(tprof_rec_idle)};
    if (h.type < 1 || h.type > TPROF_REC_IDLE || h.size < kMin[h.type]) {
      VIOLATION("cpu %u: record type %u of size %u", cpu, h.type, h.size);
      return;
    }
    uint32_t pid = 0;
    bool has_pid = true;
    switch (h.type) {
      case TPROF_REC_SAMPLE: {
        tprof_rec_sample s;
        std::memcpy(&s, p, sizeof(s));
        if (s.cpu != cpu) VIOLATION("a sample of cpu %u in cpu %u's buffer", s.cpu, cpu);
        if (s.flags & ~0xffu) VIOLATION("sample flags 0x%x", s.flags);
        // ABI 1.22: a counted stack's key, only on a sample with a stack.
        if (((s.flags & TPROF_SAMPLE_STACK_KEY) && !(s.flags & TPROF_SAMPLE_STACK)) ||
            ((s.flags & TPROF_SAMPLE_COUNTED) && !(s.flags & TPROF_SAMPLE_STACK_KEY)) ||
            ((s.flags & TPROF_SAMPLE_STACK_KEY) && (s.flags & (TPROF_SAMPLE_CALLER | TPROF_SAMPLE_USER_STACK))))
          VIOLATION("sample flags 0x%x: a stack key without its stack", s.flags);
        if ((s.flags & TPROF_SAMPLE_USER_STACK) && !(s.flags & TPROF_SAMPLE_STACK))
          VIOLATION("a user stack copy without a stack: flags 0x%x", s.flags);
        if (s.flags & TPROF_SAMPLE_STACK) {
          // ABI 1.8: the stack fills the record; no kernel frames for a
          // reader without kernel addresses (its user part is the
          // sampled process's own memory, which that reader may read).
          tprof_rec_stack st{};
          if (h.size < sizeof(s) + sizeof(st)) {
            VIOLATION("stack sample of size %u", h.size);
          } else {
            std::memcpy(&st, p + sizeof(s), sizeof(st));
            const uint32_t framed = uint32_t(sizeof(s) + sizeof(st) + 8u * (st.nr_kernel + st.nr_user));
            if (s.flags & TPROF_SAMPLE_USER_STACK)
              CheckUserStackCopy(p, framed, h.size);
            else if (h.size != framed)
              VIOLATION("stack of %u+%u frames in a record of %u bytes", st.nr_kernel, st.nr_user, h.size);
            if (st.nr_kernel + st.nr_user > TPROF_MAX_STACK_DEPTH + 2 || (st.flags & ~0x7fu))
              VIOLATION("stack of %u+%u frames, flags 0x%x", st.nr_kernel, st.nr_user, st.flags);
            // ABI 1.19: how a table walk went, only on one; a copy only where it was not covered.
            constexpr uint32_t kWalkFlags =
                TPROF_STACK_USER_WHOLE | TPROF_STACK_USER_UNCOVERED | TPROF_STACK_USER_BY_FP;
            if ((st.flags & kWalkFlags) && !(st.flags & TPROF_STACK_USER_CFI))
              VIOLATION("stack flags 0x%x: a table walk's flags without one", st.flags);
            if ((st.flags & TPROF_STACK_USER_CFI) && (st.flags & TPROF_STACK_LEAF_RA))
              VIOLATION("stack flags 0x%x: a table walk with a leaf guess", st.flags);
            if ((s.flags & TPROF_SAMPLE_USER_STACK) && (st.flags & TPROF_STACK_USER_CFI) &&
                !(st.flags & TPROF_STACK_USER_UNCOVERED))
              VIOLATION("stack flags 0x%x: a copy of a stack the tables covered", st.flags);
            if (st.flags & TPROF_STACK_USER_CFI) NoteSpace(s.space_id);
            if (g_unpriv && st.nr_kernel) VIOLATION("unprivileged stack with %u kernel frames", st.nr_kernel);
          }
        } else if (h.size != sizeof(s)) {
          VIOLATION("sample of %u bytes without a stack", h.size);
        }
        if ((s.flags & TPROF_SAMPLE_USER) && (s.ip >= kUserEnd))
          VIOLATION("user sample with ip 0x%llx", s.ip);
        if (g_unpriv && !(s.flags & TPROF_SAMPLE_USER) &&
            (s.ip || (s.caller && !(s.flags & TPROF_SAMPLE_STACK_KEY)) ||
             !(s.flags & TPROF_SAMPLE_HIDDEN)))
          VIOLATION("unprivileged kernel sample: ip 0x%llx caller 0x%llx flags 0x%x",
                    s.ip, s.caller, s.flags);
        // space_id is a hash: any value.
        CheckNoKernelPointers("SAMPLE record", &s, {U64F(tprof_rec_sample, time_ns), U64F(tprof_rec_sample, ip),
                                                    U64F(tprof_rec_sample, caller)});
        pid = s.pid;
        // A key's definition is counted in the table, not delivered here.
        if (books && !(s.flags & TPROF_SAMPLE_COUNTED)) books->delivered[cpu]++;
        // A one-process session follows the children its target creates
        // after start (perf's inherit): those are the fuzzer's own here.
        if (session_pid != TPROF_PID_ALL && s.pid != session_pid &&
            !(IsOwnPid(session_pid) && (IsOwnPidSettled(s.pid) || DescendsFrom(s.pid, session_pid))))
          VIOLATION("a session of pid %u delivered a sample of pid %u (tid %u, flags 0x%x; %s)", session_pid, s.pid,
                    s.tid, s.flags, DescribePid(s.pid).c_str());
        break;
      }
      case TPROF_REC_COMM: {
        tprof_rec_comm m;
        std::memcpy(&m, p, sizeof(m));
        if (m.kind > TPROF_COMM_EXEC) VIOLATION("COMM kind %u", m.kind);
        CheckNoKernelPointers("COMM record", &m, {U64F(tprof_rec_comm, time_ns), U64F(tprof_rec_comm, comm)});
        pid = m.pid;
        break;
      }
      case TPROF_REC_EXIT: {
        tprof_rec_exit e;
        std::memcpy(&e, p, sizeof(e));
        CheckNoKernelPointers("EXIT record", &e, {U64F(tprof_rec_exit, time_ns)});
        pid = e.pid;
        break;
      }
      case TPROF_REC_MAP: {
        tprof_rec_map m;
        std::memcpy(&m, p, sizeof(m));
        if (m.start >= m.end || m.end > kUserEnd)
          VIOLATION("MAP record [0x%llx, 0x%llx)", m.start, m.end);
        if (std::memchr(p + sizeof(m), 0, h.size - sizeof(m)) == nullptr)
          VIOLATION("MAP record path not NUL-terminated");
        CheckNoKernelPointers("MAP record", &m, {U64F(tprof_rec_map, time_ns), U64F(tprof_rec_map, start),
                                                 U64F(tprof_rec_map, end), U64F(tprof_rec_map, pgoff)});
        pid = m.pid;
        break;
      }
      case TPROF_REC_LOST: {
        tprof_rec_lost l;
        std::memcpy(&l, p, sizeof(l));
        if (books) books->lost_in_recs[cpu] += l.lost_samples;
        CheckNoKernelPointers("LOST record", &l, {U64s{8, sizeof(l) - 8}});
        has_pid = false;
        break;
      }
      case TPROF_REC_IDLE: {  // tick sampling of every CPU: never an unprivileged session's
        tprof_rec_idle i;
        std::memcpy(&i, p, sizeof(i));
        if (g_unpriv || session_pid != TPROF_PID_ALL)
          VIOLATION("an IDLE record in a session of one process (%u)", session_pid);
        if (i.cpu != cpu || i.iowait_ticks > i.idle_ticks || i.idle_ticks == 0 || i.__pad)
          VIOLATION("IDLE record: cpu %u in cpu %u's half, %u idle, %u iowait, pad %u", i.cpu, cpu,
                    i.idle_ticks, i.iowait_ticks, i.__pad);
        CheckNoKernelPointers("IDLE record", &i, {U64F(tprof_rec_idle, time_ns)});
        has_pid = false;
        break;
      }
    }
    if (has_pid && g_unpriv && !(h.type == TPROF_REC_SAMPLE && pid == 0) && !IsOwnPidSettled(pid))
      VIOLATION("record type %u of pid %u (not the unprivileged caller's own) delivered", h.type, pid);
    if (has_pid && g_unpriv && h.type == TPROF_REC_SAMPLE && pid == 0)
      VIOLATION("an idle-task sample was delivered to the unprivileged caller's session");
    off += h.size;
  }
}
}  // namespace

// Reads every full half of a mapping, parses it and (release) hands it back.
// Returns halves consumed.
int ConsumeHalves(int fd, const char* map, uint32_t nr_cpu, uint32_t ctl_bytes, uint32_t half_bytes,
                  Books* books, uint32_t session_pid, bool release) {
  int n = 0;
  for (uint32_t c = 0; c < nr_cpu; ++c) {
    auto* ctl = reinterpret_cast<const tprof_buffer_ctl*>(map + size_t(c) * sizeof(tprof_buffer_ctl));
    bool full[2] = {__atomic_load_n(&ctl->full[0], __ATOMIC_ACQUIRE) != 0,
                    __atomic_load_n(&ctl->full[1], __ATOMIC_ACQUIRE) != 0};
    // Both full: the older publication first.
    uint32_t order[2] = {0, 1};
    if (full[0] && full[1] && __atomic_load_n(&ctl->seq[1], __ATOMIC_RELAXED) < __atomic_load_n(&ctl->seq[0], __ATOMIC_RELAXED))
      std::swap(order[0], order[1]);
    for (uint32_t h : order) {
      if (!full[h]) continue;
      uint32_t used = __atomic_load_n(&ctl->used[h], __ATOMIC_RELAXED);
      u64 seq = __atomic_load_n(&ctl->seq[h], __ATOMIC_RELAXED);
      if (books) {
        if (seq <= books->last_seq[c] && books->last_seq[c] != ~0ULL && seq != 0)
          VIOLATION("cpu %u: half %u published with seq %llu after seq %llu", c, h, seq,
                    books->last_seq[c]);
        books->last_seq[c] = seq;
      }
      ParseHalf(map + ctl_bytes + (2 * size_t(c) + h) * half_bytes, used, half_bytes, c, books, session_pid);
      if (release) {
        tprof_buffer_release rel{};
        rel.cpu = c;
        rel.half = h;
        int err = RawIoctl("SAMPLING_RELEASE", fd, TPROF_IOC_SAMPLING_RELEASE, &rel);
        if (err && books) VIOLATION("SAMPLING_RELEASE of a full half (cpu %u half %u): %s", c, h, ErrName(err).c_str());
      }
      ++n;
    }
  }
  return n;
}

}  // namespace tprof_fuzz::core
