// The profiler side of per-thread metrics, for a language runtime to embed.
//
// The runtime reports its own threads and method entries/exits; on every
// event the profiler reads-and-zeroes the kernel thread's accumulated metrics
// (Device::ReadThread) and charges that delta to the node the runtime thread
// was in until now. A tree per runtime thread (root = the thread, children =
// methods, a call tree: the same method under different callers is a
// different node) holds base values (charged directly); cumulative values
// (base plus every descendant) are computed when a snapshot is taken.
//
// Kernel thread reuse: a table maps kernel tid -> the runtime thread bound to
// it. When a runtime thread starts on a tid that is still bound, the tid's
// pending delta goes to the previous runtime thread's current node
// (ReusePolicy::kChargePrevious, the preferred rule) or to the new
// thread (kChargeNew); the previous thread is flagged terminated and the
// table entry overwritten. Poll() drains every thread with a nonzero delta;
// deltas of tids that no runtime thread is bound to are kept in an
// "unattributed" bucket, never dropped.
//
// Event hooks never fail from the runtime's point of view: the bookkeeping
// always happens, and a failed kernel read is counted (ProfileSnapshot::
// read_errors, last_error). The read zeroes nothing when it fails, so that
// delta shows up in a later read or Poll().
//
// Thread safety: every public call takes one mutex, and the MetricsSource is
// only called with that mutex held, so a source need not be thread-safe.
#ifndef TPROF_RUNTIME_PROFILER_H_
#define TPROF_RUNTIME_PROFILER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tprof/device/device.h"
#include "tprof/base/expected.h"
#include "tprof/device/metrics.h"

namespace tprof {

// Where per-thread deltas come from: the device, or a fake in tests.
class MetricsSource {
 public:
  virtual ~MetricsSource() = default;
  // Read-and-zero of one kernel thread's accumulated metrics.
  virtual Expected<ThreadMetrics> ReadThread(uint32_t tid) = 0;
  // Read-and-zero of every thread (of this process) with a nonzero delta.
  virtual Expected<DrainResult> Drain() = 0;
};

// MetricsSource over /dev/tprof: ReadThread -> Device::ReadThread(tid),
// Drain -> Device::DrainAll(0) (the caller's process). The Device must
// outlive it.
class DeviceMetricsSource : public MetricsSource {
 public:
  explicit DeviceMetricsSource(const Device& device) : device_(device) {}
  Expected<ThreadMetrics> ReadThread(uint32_t tid) override;
  Expected<DrainResult> Drain() override;

 private:
  const Device& device_;
};

enum class ReusePolicy {
  kChargePrevious,  // a reused tid's pending delta goes to the previous runtime thread
  kChargeNew,       // ... or to the runtime thread that now starts on it
};

// Identifies a runtime thread; issued by OnThreadStart, starting at 1.
enum class RuntimeThreadId : uint64_t {};

// Why a runtime thread is flagged terminated (the first reason seen).
enum class Termination {
  kNone,          // running
  kEnded,         // OnThreadEnd
  kTidReused,     // another runtime thread started on its kernel tid
  kKernelExited,  // Poll() saw its kernel thread exit
};
std::string_view TerminationName(Termination t);  // "running", "ended", "tid-reused"...

// Copies of the tree, with cumulative values filled in.
struct NodeSnapshot {
  std::string name;  // method name; the thread's name for a root
  uint64_t calls = 0;  // method entries (0 for a root)
  std::vector<uint64_t> base;        // per metric, charged to this node itself
  std::vector<uint64_t> cumulative;  // base + all descendants
  std::vector<NodeSnapshot> children;  // highest cumulative[0] first, then by name

  const NodeSnapshot* Child(std::string_view method) const;
};

struct ThreadSnapshot {
  RuntimeThreadId id{};
  uint32_t kernel_tid = 0;
  Termination termination = Termination::kNone;
  NodeSnapshot root;

  bool terminated() const { return termination != Termination::kNone; }
};

struct ProfileSnapshot {
  std::vector<std::string> metrics;
  ReusePolicy policy = ReusePolicy::kChargePrevious;
  std::vector<ThreadSnapshot> threads;  // in start order
  // Deltas of kernel threads no runtime thread was bound to.
  std::vector<uint64_t> unattributed;
  uint64_t unattributed_deltas = 0;
  uint64_t read_errors = 0;     // failed ReadThread/Drain calls
  std::string last_error;       // message of the last one
  uint64_t ignored_events = 0;  // unknown or finished thread, exit without entry
  uint64_t untracked_kernel_threads = 0;  // as last reported by a drain

  const ThreadSnapshot* Thread(RuntimeThreadId id) const;
};

class RuntimeProfiler {
 public:
  // metric_names label the values of the source's records, in order (e.g.
  // MetricKey of each enabled metric). The source must outlive the profiler.
  RuntimeProfiler(MetricsSource& source, std::vector<std::string> metric_names,
                  ReusePolicy policy = ReusePolicy::kChargePrevious);
  ~RuntimeProfiler();
  RuntimeProfiler(const RuntimeProfiler&) = delete;
  RuntimeProfiler& operator=(const RuntimeProfiler&) = delete;

  // A runtime thread begins on kernel thread kernel_tid (0: the calling
  // thread). The tid's pending delta is charged per the ReusePolicy if the
  // tid is still bound to another runtime thread (which is then flagged
  // kTidReused), else to the new thread's root; then the tid is bound to it.
  // If the read's identity shows the tid now names another kernel thread,
  // this is no reuse: the delta is the new thread's and the previous one is
  // flagged kKernelExited.
  RuntimeThreadId OnThreadStart(std::string name, uint32_t kernel_tid);
  // Charge the thread's delta to its current node, then push/pop a method.
  void OnMethodEnter(RuntimeThreadId thread, std::string_view method);
  void OnMethodExit(RuntimeThreadId thread);
  // Charge the delta, flag the thread kEnded and unbind its tid. For a
  // thread already flagged kTidReused the tid belongs to its successor: the
  // delta goes to the ended thread (kChargePrevious) or to the successor
  // (kChargeNew) and the binding stays.
  void OnThreadEnd(RuntimeThreadId thread);

  // Drains every nonzero delta and charges it to the current node of the
  // runtime thread bound to its tid (else: unattributed). A kernel thread
  // that exited ends its runtime thread (kKernelExited). Fails only if the
  // drain itself fails (e.g. ENODATA: accounting is off).
  Status Poll();

  // The runtime thread bound to a kernel tid now, if any.
  std::optional<RuntimeThreadId> ThreadOnKernelTid(uint32_t kernel_tid) const;

  ProfileSnapshot Snapshot() const;
  // An indented tree with per-metric base and cumulative columns.
  std::string ToText() const;
  // One JSON document (format_version, metrics, policy, threads with nested
  // method trees, the unattributed bucket and error counts), one line.
  std::string ToJson() const;

 private:
  struct Node;
  struct Thread;

  static NodeSnapshot CopyNode(const Node& node);
  Thread* FindLocked(RuntimeThreadId id);
  // Reads the tid's delta; nullopt (and counted) if the read fails.
  std::optional<ThreadMetrics> ReadLocked(uint32_t tid);
  void Charge(Node& node, const std::vector<uint64_t>& values);
  void ChargeUnattributed(const std::vector<uint64_t>& values);
  // The read-and-charge before any method event or end of `thread`.
  void ChargeEventLocked(Thread& thread);

  MetricsSource& source_;
  const std::vector<std::string> metrics_;
  const ReusePolicy policy_;

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Thread>> threads_;  // index = id - 1
  std::unordered_map<uint32_t, Thread*> by_tid_;  // running threads only
  std::vector<uint64_t> unattributed_;
  uint64_t unattributed_deltas_ = 0;
  uint64_t read_errors_ = 0;
  std::string last_error_;
  uint64_t ignored_events_ = 0;
  uint64_t untracked_kernel_threads_ = 0;
};

}  // namespace tprof

#endif  // TPROF_RUNTIME_PROFILER_H_
