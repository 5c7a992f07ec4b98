// A sampling session on /dev/tprof: start it, map its per-CPU double
// buffers read-only, hand every full half to a callback record by record,
// give the half back, stop. The session belongs to this object's own file
// descriptor: destroying the object (or the process dying) ends it.
#ifndef TPROF_SAMPLING_H_
#define TPROF_SAMPLING_H_

#include <linux/tprof.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tprof/base/expected.h"
#include "tprof/base/scoped_fd.h"
#include "tprof/device/scoped_mapping.h"

namespace tprof {

struct SamplingOptions {
  uint32_t frequency_hz = 0;   // clock sampling rate per CPU; 0 = module default (1000)
  uint32_t half_bytes = 0;     // per CPU half-buffer; 0 = module default (64 KiB)
  uint32_t pid = TPROF_PID_ALL;  // one process, or every process
  bool callers = false;        // also record each sample's caller
  // Whole stacks (ABI 1.8): each sample's kernel and user frames, at most
  // stack_depth (1..TPROF_MAX_STACK_DEPTH); 0 = none.
  uint32_t stack_depth = 0;
  // With stacks, also a copy of each user-task sample's user stack, this
  // many bytes from sp, for a walk with the binaries' CFI (ABI 1.18; a
  // module before it: ENOTSUP); 0 = none.
  uint32_t user_stack_bytes = 0;
  // With stacks, the module walks user stacks with the unwind tables a
  // Recorder loads for the mapped files (ABI 1.19; before: ENOTSUP); a
  // copy (user_stack_bytes) is then taken only where they did not cover
  // the walk (a process whose tables are not loaded yet).
  bool unwind_tables = false;
  // TPROF_SAMPLE_ON_CLOCK (frequency_hz), TPROF_SAMPLE_ON_TICK (at HZ, in
  // the scheduler tick: ABI 1.21, before it ENOTSUP), or a counter:
  // TPROF_METRIC_SOFTWARE/HARDWARE/RAW with event_config and event_period.
  uint32_t event_type = TPROF_SAMPLE_ON_CLOCK;
  uint64_t event_config = 0;
  uint64_t event_period = 0;   // events per sample (counter sampling)
  // Samples only on these CPUs, as perf record -C (ABI 1.16; a module
  // before it: ENOTSUP); empty: every CPU.
  std::vector<uint32_t> cpus;
  // Counts per (process, space, address) in the module's per-CPU tables
  // instead of a record per sample (ABI 1.21; before it ENOTSUP), read
  // with ReadAggregate(); with stacks (stack_depth) per stack key (ABI
  // 1.22), not with callers or user stack copies. aggregate_slots:
  // entries per CPU table, 0 = the module's default. aggregate_records: a
  // check: every sample as a record too.
  bool aggregate = false;
  bool aggregate_records = false;
  uint32_t aggregate_slots = 0;
};

// Parses "--event" names: cpu-clock (clock sampling), page-faults,
// context-switches, cpu-migrations, task-clock, cycles, instructions,
// cache-misses, branch-misses, or rNNNN (raw hex code).
Status ParseSampleEvent(const std::string& name, SamplingOptions* options);

struct CpuBufferTotals {
  uint64_t samples_taken = 0;
  uint64_t lost_samples = 0;
  uint64_t lost_records = 0;
};

class SamplingSession {
 public:
  // Called for each record of a consumed half: its CPU, the record and the
  // bytes left in the half from the record on (>= header size). Returning
  // false (a record the caller finds malformed) ends the walk of that half.
  using RecordFn = std::function<bool(uint32_t cpu, const tprof_rec_header* rec, size_t avail)>;

  static Expected<SamplingSession> Start(const SamplingOptions& options,
                                         const std::string& device_path = TPROF_DEVICE_PATH);
  // Start() as `record -g` and `top -g` want it. With stacks and no
  // half-buffer size given, perf's default per CPU (256 KiB halves): a
  // record with a 40-frame stack is ~380 bytes against 56 without, so at
  // the module's 64 KiB default the recorder would wake 7x as often, and
  // each wake-up is time taken from the profiled machine. Where memlock
  // refuses that (EPERM), the module's default. A module older than ABI
  // 1.8 refuses stacks (EINVAL): then each sample's caller only, and
  // *stacks_refused says so.
  static Expected<SamplingSession> StartPreferringStacks(SamplingOptions options,
                                                         bool* stacks_refused);

  // Hands every full half, oldest first per CPU, to `fn` and gives it back.
  // Returns the number of halves consumed. Malformed records end their half
  // (counted in malformed_halves()).
  Expected<size_t> Consume(const RecordFn& fn);

  // Stops sampling; the partial halves become full. Consume() until
  // Finished() to get everything.
  Status Stop();
  // Publishes every CPU's partial half while sampling goes on (ABI 1.8):
  // the next Consume() sees everything recorded so far. For live views.
  Status Flush();
  // AGGREGATE: takes CPU cpu's counts since its previous read into
  // *entries (replaced); the read's totals and times.
  [[nodiscard]] Expected<tprof_aggregate_read> ReadAggregate(
      uint32_t cpu, std::vector<tprof_aggregate_entry>* entries) const;
  // True once stopped (by Stop() or an administrator's StopAnySampling())
  // and every half has been consumed.
  bool Finished() const;
  // Waits for a full half (or the end) up to timeout_ms (-1: forever).
  Status Wait(int timeout_ms) const;

  CpuBufferTotals Totals(uint32_t cpu) const;
  CpuBufferTotals TotalsAll() const;
  uint32_t nr_cpu_ids() const { return config_.nr_cpu_ids; }
  const tprof_sampling_config& config() const { return config_; }
  uint64_t malformed_halves() const { return malformed_halves_; }
  int fd() const { return fd_.get(); }
  // The read-only mapping: the control area, then the halves.
  const uint8_t* map_data() const { return map_.data(); }

 private:
  SamplingSession(ScopedFd fd, ScopedMapping map, const tprof_sampling_config& c)
      : fd_(std::move(fd)), map_(std::move(map)), config_(c) {}
  const tprof_buffer_ctl& Ctl(uint32_t cpu) const;
  const uint8_t* Half(uint32_t cpu, uint32_t half) const;

  ScopedFd fd_;
  ScopedMapping map_;
  tprof_sampling_config config_{};
  bool stopped_ = false;
  uint64_t malformed_halves_ = 0;
};

}  // namespace tprof

#endif  // TPROF_SAMPLING_H_
