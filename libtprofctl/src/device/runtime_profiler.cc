#include "tprof/device/runtime_profiler.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "base/json.h"

namespace tprof {

// A method (or, as a thread's root, the thread itself) in one call tree.
struct RuntimeProfiler::Node {
  Node(std::string node_name, Node* caller, size_t nr_metrics)
      : name(std::move(node_name)), parent(caller), base(nr_metrics, 0) {}

  std::string name;
  Node* parent;  // the caller; nullptr for a root
  uint64_t calls = 0;
  std::vector<uint64_t> base;
  // By method name; std::less<> so a string_view finds a child unconverted.
  std::map<std::string, std::unique_ptr<Node>, std::less<>> children;
};

struct RuntimeProfiler::Thread {
  Thread(RuntimeThreadId thread_id, std::string name, uint32_t tid, size_t nr_metrics)
      : id(thread_id), kernel_tid(tid), root(std::move(name), nullptr, nr_metrics) {}

  RuntimeThreadId id;
  uint32_t kernel_tid;
  uint64_t identity = 0;  // the kernel thread's, from the first read; 0: unknown
  Termination termination = Termination::kNone;
  bool finished = false;  // no events accepted any more (ended or kernel thread gone)
  Node root;
  Node* top = &root;  // the node deltas are charged to now; parents form the stack
};

namespace {

// Whether a record is about the kernel thread `thread_identity` was read
// from: a tid can be reused by a new kernel thread after the old one exits.
bool SameKernelThread(uint64_t thread_identity, uint64_t record_identity) {
  return thread_identity == 0 || record_identity == 0 || thread_identity == record_identity;
}

std::string_view PolicyName(ReusePolicy policy) {
  return policy == ReusePolicy::kChargeNew ? "charge-new" : "charge-previous";
}

}  // namespace

std::string_view TerminationName(Termination t) {
  switch (t) {
    case Termination::kNone: return "running";
    case Termination::kEnded: return "ended";
    case Termination::kTidReused: return "tid-reused";
    case Termination::kKernelExited: return "kernel-thread-exited";
  }
  return "unknown";
}

const NodeSnapshot* NodeSnapshot::Child(std::string_view method) const {
  for (const NodeSnapshot& c : children)
    if (c.name == method) return &c;
  return nullptr;
}

const ThreadSnapshot* ProfileSnapshot::Thread(RuntimeThreadId id) const {
  for (const ThreadSnapshot& t : threads)
    if (t.id == id) return &t;
  return nullptr;
}

RuntimeProfiler::RuntimeProfiler(MetricsSource& source, std::vector<std::string> metric_names,
                                 ReusePolicy policy)
    : source_(source),
      metrics_(std::move(metric_names)),
      policy_(policy),
      unattributed_(metrics_.size(), 0) {}

RuntimeProfiler::~RuntimeProfiler() = default;

RuntimeProfiler::Thread* RuntimeProfiler::FindLocked(RuntimeThreadId id) {
  uint64_t n = static_cast<uint64_t>(id);
  if (n == 0 || n > threads_.size()) return nullptr;
  return threads_[n - 1].get();
}

std::optional<ThreadMetrics> RuntimeProfiler::ReadLocked(uint32_t tid) {
  auto m = source_.ReadThread(tid);
  if (!m) {
    ++read_errors_;
    last_error_ = m.error().message();
    return std::nullopt;
  }
  return std::move(m).value();
}

void RuntimeProfiler::Charge(Node& node, const std::vector<uint64_t>& values) {
  for (size_t i = 0; i < node.base.size() && i < values.size(); ++i) node.base[i] += values[i];
}

void RuntimeProfiler::ChargeUnattributed(const std::vector<uint64_t>& values) {
  for (size_t i = 0; i < unattributed_.size() && i < values.size(); ++i)
    unattributed_[i] += values[i];
  ++unattributed_deltas_;
}

void RuntimeProfiler::ChargeEventLocked(Thread& thread) {
  auto m = ReadLocked(thread.kernel_tid);
  if (!m) return;
  // A thread flagged kTidReused is still reporting events, but its kernel
  // tid now runs its successor: the policy says whose delta this is.
  Thread* owner = &thread;
  if (thread.termination == Termination::kTidReused && policy_ == ReusePolicy::kChargeNew) {
    auto it = by_tid_.find(thread.kernel_tid);
    if (it != by_tid_.end()) owner = it->second;
  }
  if (!SameKernelThread(owner->identity, m->identity)) {
    ChargeUnattributed(m->values);  // the kernel thread itself was replaced
    return;
  }
  Charge(*owner->top, m->values);
}

RuntimeThreadId RuntimeProfiler::OnThreadStart(std::string name, uint32_t kernel_tid) {
  if (kernel_tid == 0) kernel_tid = static_cast<uint32_t>(::gettid());
  std::lock_guard<std::mutex> lock(mu_);
  auto id = static_cast<RuntimeThreadId>(threads_.size() + 1);
  threads_.push_back(std::make_unique<Thread>(id, std::move(name), kernel_tid, metrics_.size()));
  Thread& thread = *threads_.back();

  Thread* previous = nullptr;
  if (auto it = by_tid_.find(kernel_tid); it != by_tid_.end()) previous = it->second;

  // Read before binding: whatever the tid accumulated since its last event
  // predates this runtime thread.
  auto m = ReadLocked(kernel_tid);
  bool same_kernel_thread = true;
  if (m) {
    thread.identity = m->identity;
    same_kernel_thread = previous == nullptr || SameKernelThread(previous->identity, m->identity);
    if (previous != nullptr && same_kernel_thread && policy_ == ReusePolicy::kChargePrevious)
      Charge(*previous->top, m->values);
    else
      Charge(thread.root, m->values);  // not a reuse, or the documented alternative
  }
  if (previous != nullptr) {
    if (same_kernel_thread) {
      previous->termination = Termination::kTidReused;  // it may still report its end
    } else {
      // The tid now names another kernel thread: the old one has exited.
      previous->termination = Termination::kKernelExited;
      previous->finished = true;
    }
  }
  by_tid_[kernel_tid] = &thread;
  return id;
}

void RuntimeProfiler::OnMethodEnter(RuntimeThreadId id, std::string_view method) {
  std::lock_guard<std::mutex> lock(mu_);
  Thread* thread = FindLocked(id);
  if (thread == nullptr || thread->finished) {
    ++ignored_events_;
    return;
  }
  ChargeEventLocked(*thread);
  Node& caller = *thread->top;
  auto it = caller.children.find(method);
  if (it == caller.children.end())
    it = caller.children
             .emplace(std::string(method),
                      std::make_unique<Node>(std::string(method), &caller, metrics_.size()))
             .first;
  ++it->second->calls;
  thread->top = it->second.get();
}

void RuntimeProfiler::OnMethodExit(RuntimeThreadId id) {
  std::lock_guard<std::mutex> lock(mu_);
  Thread* thread = FindLocked(id);
  if (thread == nullptr || thread->finished) {
    ++ignored_events_;
    return;
  }
  ChargeEventLocked(*thread);
  if (thread->top->parent == nullptr) {
    ++ignored_events_;  // an exit without an entry: the delta stays on the root
    return;
  }
  thread->top = thread->top->parent;
}

void RuntimeProfiler::OnThreadEnd(RuntimeThreadId id) {
  std::lock_guard<std::mutex> lock(mu_);
  Thread* thread = FindLocked(id);
  if (thread == nullptr || thread->finished) {
    ++ignored_events_;
    return;
  }
  ChargeEventLocked(*thread);
  thread->finished = true;
  if (thread->termination != Termination::kNone) return;  // kTidReused: the binding is not ours
  thread->termination = Termination::kEnded;
  if (auto it = by_tid_.find(thread->kernel_tid); it != by_tid_.end() && it->second == thread)
    by_tid_.erase(it);
}

Status RuntimeProfiler::Poll() {
  std::lock_guard<std::mutex> lock(mu_);
  auto drained = source_.Drain();
  if (!drained) {
    ++read_errors_;
    last_error_ = drained.error().message();
    return drained.error();
  }
  untracked_kernel_threads_ = drained->untracked_threads;
  for (const ThreadMetrics& record : drained->threads) {
    auto it = by_tid_.find(record.tid);
    if (it == by_tid_.end() || !SameKernelThread(it->second->identity, record.identity)) {
      ChargeUnattributed(record.values);
      continue;
    }
    Thread& thread = *it->second;
    if (thread.identity == 0) thread.identity = record.identity;
    Charge(*thread.top, record.values);
    if (record.exited) {
      thread.termination = Termination::kKernelExited;
      thread.finished = true;
      by_tid_.erase(it);
    }
  }
  return OkStatus();
}

std::optional<RuntimeThreadId> RuntimeProfiler::ThreadOnKernelTid(uint32_t kernel_tid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_tid_.find(kernel_tid);
  if (it == by_tid_.end()) return std::nullopt;
  return it->second->id;
}

// Cumulative = base + the children's cumulative, computed bottom-up.
NodeSnapshot RuntimeProfiler::CopyNode(const Node& node) {
  NodeSnapshot s;
  s.name = node.name;
  s.calls = node.calls;
  s.base = node.base;
  s.cumulative = node.base;
  for (const auto& entry : node.children) {
    s.children.push_back(CopyNode(*entry.second));
    const NodeSnapshot& c = s.children.back();
    for (size_t i = 0; i < s.cumulative.size(); ++i) s.cumulative[i] += c.cumulative[i];
  }
  // Heaviest first, so a reader sees at once where the first metric went;
  // the map already ordered them by name for ties.
  std::stable_sort(s.children.begin(), s.children.end(),
                   [](const NodeSnapshot& a, const NodeSnapshot& b) {
                     uint64_t ca = a.cumulative.empty() ? 0 : a.cumulative[0];
                     uint64_t cb = b.cumulative.empty() ? 0 : b.cumulative[0];
                     return ca > cb;
                   });
  return s;
}

ProfileSnapshot RuntimeProfiler::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  ProfileSnapshot p;
  p.metrics = metrics_;
  p.policy = policy_;
  p.threads.reserve(threads_.size());
  for (const auto& t : threads_) {
    ThreadSnapshot ts;
    ts.id = t->id;
    ts.kernel_tid = t->kernel_tid;
    ts.termination = t->termination;
    ts.root = CopyNode(t->root);
    p.threads.push_back(std::move(ts));
  }
  p.unattributed = unattributed_;
  p.unattributed_deltas = unattributed_deltas_;
  p.read_errors = read_errors_;
  p.last_error = last_error_;
  p.ignored_events = ignored_events_;
  p.untracked_kernel_threads = untracked_kernel_threads_;
  return p;
}

namespace {

struct TextRow {
  std::string label;
  const std::vector<uint64_t>* base;
  const std::vector<uint64_t>* cumulative;
};

void AddRows(const NodeSnapshot& node, int depth, std::vector<TextRow>& rows) {
  for (const NodeSnapshot& c : node.children) {
    std::string label(static_cast<size_t>(depth) * 2, ' ');
    label += c.name + " (" + std::to_string(c.calls) + (c.calls == 1 ? " call)" : " calls)");
    rows.push_back({std::move(label), &c.base, &c.cumulative});
    AddRows(c, depth + 1, rows);
  }
}

Json Values(const std::vector<std::string>& metrics, const std::vector<uint64_t>& values) {
  Json out = Json::object();
  for (size_t i = 0; i < metrics.size() && i < values.size(); ++i) out[metrics[i]] = values[i];
  return out;
}

Json Methods(const std::vector<std::string>& metrics, const NodeSnapshot& node) {
  Json out = Json::array();
  for (const NodeSnapshot& c : node.children)
    out.push_back({{"name", c.name},
                   {"calls", c.calls},
                   {"base", Values(metrics, c.base)},
                   {"cumulative", Values(metrics, c.cumulative)},
                   {"methods", Methods(metrics, c)}});
  return out;
}

}  // namespace

std::string RuntimeProfiler::ToText() const {
  ProfileSnapshot p = Snapshot();
  size_t terminated = 0;
  for (const ThreadSnapshot& t : p.threads) terminated += t.terminated() ? 1 : 0;

  std::vector<TextRow> rows;
  for (const ThreadSnapshot& t : p.threads) {
    std::string label = t.root.name + " (#" + std::to_string(static_cast<uint64_t>(t.id)) +
                        ", tid " + std::to_string(t.kernel_tid) + ")";
    if (t.terminated()) label += " [terminated: " + std::string(TerminationName(t.termination)) + "]";
    rows.push_back({std::move(label), &t.root.base, &t.root.cumulative});
    AddRows(t.root, 1, rows);
  }
  rows.push_back({"unattributed (" + std::to_string(p.unattributed_deltas) + " deltas)",
                  &p.unattributed, &p.unattributed});

  // Column widths: the widest label, and per column its header or value.
  std::vector<std::string> headers;
  for (const std::string& m : p.metrics) {
    headers.push_back(m + " base");
    headers.push_back(m + " cum");
  }
  size_t label_width = 4;  // "name"
  std::vector<size_t> widths;
  for (const std::string& h : headers) widths.push_back(h.size());
  for (const TextRow& r : rows) {
    label_width = std::max(label_width, r.label.size());
    for (size_t i = 0; i < p.metrics.size(); ++i) {
      widths[2 * i] = std::max(widths[2 * i], std::to_string((*r.base)[i]).size());
      widths[2 * i + 1] = std::max(widths[2 * i + 1], std::to_string((*r.cumulative)[i]).size());
    }
  }

  std::string out = "runtime profile: " + std::to_string(p.threads.size()) +
                    " runtime threads (" + std::to_string(terminated) +
                    " terminated), reuse policy " + std::string(PolicyName(p.policy)) + "\n";
  auto pad_right = [](const std::string& s, size_t w) { return s + std::string(w - s.size(), ' '); };
  auto pad_left = [](const std::string& s, size_t w) { return std::string(w - s.size(), ' ') + s; };
  out += pad_right("name", label_width);
  for (size_t i = 0; i < headers.size(); ++i) out += "  " + pad_left(headers[i], widths[i]);
  out += "\n";
  for (const TextRow& r : rows) {
    out += pad_right(r.label, label_width);
    for (size_t i = 0; i < p.metrics.size(); ++i) {
      out += "  " + pad_left(std::to_string((*r.base)[i]), widths[2 * i]);
      out += "  " + pad_left(std::to_string((*r.cumulative)[i]), widths[2 * i + 1]);
    }
    out += "\n";
  }
  if (p.read_errors != 0)
    out += "read errors: " + std::to_string(p.read_errors) + " (last: " + p.last_error + ")\n";
  if (p.ignored_events != 0)
    out += "ignored events: " + std::to_string(p.ignored_events) +
           " (unknown or finished thread, or exit without entry)\n";
  if (p.untracked_kernel_threads != 0)
    out += "kernel threads not tracked (module table full): " +
           std::to_string(p.untracked_kernel_threads) + "\n";
  return out;
}

std::string RuntimeProfiler::ToJson() const {
  ProfileSnapshot p = Snapshot();
  Json threads = Json::array();
  for (const ThreadSnapshot& t : p.threads)
    threads.push_back({{"id", static_cast<uint64_t>(t.id)},
                       {"name", t.root.name},
                       {"kernel_tid", t.kernel_tid},
                       {"terminated", t.terminated()},
                       {"termination", TerminationName(t.termination)},
                       {"base", Values(p.metrics, t.root.base)},
                       {"cumulative", Values(p.metrics, t.root.cumulative)},
                       {"methods", Methods(p.metrics, t.root)}});
  Json j = {{"format_version", kJsonFormatVersion},
            {"metrics", p.metrics},
            {"reuse_policy", PolicyName(p.policy)},
            {"threads", std::move(threads)},
            {"unattributed",
             {{"deltas", p.unattributed_deltas}, {"values", Values(p.metrics, p.unattributed)}}},
            {"read_errors", p.read_errors},
            {"last_error", p.last_error},
            {"ignored_events", p.ignored_events},
            {"untracked_kernel_threads", p.untracked_kernel_threads}};
  return j.dump();
}

}  // namespace tprof
