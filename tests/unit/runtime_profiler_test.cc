// RuntimeProfiler (per-thread metrics, the profiler side) against a fake metrics source:
// where each kernel delta is charged, base vs cumulative, kernel-tid reuse
// under both policies, thread ends, Poll attribution, and the reports.
#include "tprof/device/runtime_profiler.h"

#include "tprof/output/json_format.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "../common/json.h"

namespace {

using tprof::DrainResult;
using tprof::Error;
using tprof::Expected;
using tprof::NodeSnapshot;
using tprof::ProfileSnapshot;
using tprof::ReusePolicy;
using tprof::RuntimeProfiler;
using tprof::RuntimeThreadId;
using tprof::Termination;
using tprof::ThreadMetrics;
using tprof::ThreadSnapshot;
using tprof::test::ParseJson;

using Values = std::vector<uint64_t>;
const std::vector<std::string> kMetrics = {"time_ns", "dispatches"};

// Per-tid pending deltas that tests set; reads and drains zero them like the
// module does. Thread-safe, since the concurrency test adds from many threads.
class FakeMetricsSource : public tprof::MetricsSource {
 public:
  void Add(uint32_t tid, Values delta) {
    std::lock_guard<std::mutex> lock(mu_);
    Kernel& k = Get(tid);
    for (size_t i = 0; i < delta.size(); ++i) k.pending[i] += delta[i];
  }
  // The kernel thread behind `tid` is replaced by a new one (OS tid reuse).
  void NewKernelThread(uint32_t tid, uint64_t identity) {
    std::lock_guard<std::mutex> lock(mu_);
    Get(tid).identity = identity;
  }
  // The next drain reports the thread once more, exited, then forgets it.
  void Exit(uint32_t tid) {
    std::lock_guard<std::mutex> lock(mu_);
    Get(tid).exited = true;
  }
  void FailWith(int err) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_ = err;
  }

  Expected<ThreadMetrics> ReadThread(uint32_t tid) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_ != 0) return Error::FromErrno(fail_, "fake read failed");
    return Take(tid, Get(tid));
  }
  Expected<DrainResult> Drain() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_ != 0) return Error::FromErrno(fail_, "fake drain failed");
    DrainResult r;
    for (auto it = kernel_.begin(); it != kernel_.end();) {
      bool nonzero = it->second.pending != Values(kMetrics.size(), 0);
      if (nonzero || it->second.exited) r.threads.push_back(Take(it->first, it->second));
      it = it->second.exited ? kernel_.erase(it) : std::next(it);
    }
    return r;
  }

 private:
  struct Kernel {
    uint64_t identity;
    bool exited = false;
    Values pending = Values(kMetrics.size(), 0);
  };
  Kernel& Get(uint32_t tid) {
    // By default a tid's identity is derived from it: one kernel thread per tid.
    return kernel_.try_emplace(tid, Kernel{1000 + tid}).first->second;
  }
  static ThreadMetrics Take(uint32_t tid, Kernel& k) {
    ThreadMetrics m;
    m.pid = 1;
    m.tid = tid;
    m.identity = k.identity;
    m.exited = k.exited;
    m.comm = "fake";
    m.values = k.pending;
    k.pending.assign(kMetrics.size(), 0);
    return m;
  }

  std::mutex mu_;
  std::map<uint32_t, Kernel> kernel_;
  int fail_ = 0;
};

const NodeSnapshot& Path(const ThreadSnapshot& thread, std::initializer_list<const char*> methods) {
  const NodeSnapshot* node = &thread.root;
  for (const char* m : methods) {
    node = node->Child(m);
    if (node == nullptr) {
      ADD_FAILURE() << "no method node " << m << " in thread " << thread.root.name;
      static const NodeSnapshot kEmpty{"", 0, Values(kMetrics.size(), 0),
                                       Values(kMetrics.size(), 0), {}};
      return kEmpty;
    }
  }
  return *node;
}

const ThreadSnapshot& Thread(const ProfileSnapshot& p, RuntimeThreadId id) {
  const ThreadSnapshot* t = p.Thread(id);
  if (t == nullptr) {
    ADD_FAILURE() << "no runtime thread #" << static_cast<uint64_t>(id);
    static const ThreadSnapshot kEmpty{};
    return kEmpty;
  }
  return *t;
}

TEST(RuntimeProfiler, BaseIsChargedToTheNodeOnTopAndCumulativeSumsDescendants) {
  FakeMetricsSource src;
  RuntimeProfiler prof(src, kMetrics);
  src.Add(100, {5, 1});  // before the thread starts: goes to its root
  RuntimeThreadId t = prof.OnThreadStart("worker", 100);
  src.Add(100, {7, 0});
  prof.OnMethodEnter(t, "main");
  src.Add(100, {20, 1});
  prof.OnMethodEnter(t, "parse");
  src.Add(100, {30, 2});
  prof.OnMethodEnter(t, "tokenize");
  src.Add(100, {40, 0});
  prof.OnMethodExit(t);  // tokenize
  src.Add(100, {3, 0});
  prof.OnMethodEnter(t, "render");  // parse -> render
  src.Add(100, {15, 1});
  prof.OnMethodExit(t);  // render
  src.Add(100, {1, 0});
  prof.OnMethodExit(t);  // parse
  src.Add(100, {1, 0});
  prof.OnMethodExit(t);  // main
  src.Add(100, {2, 0});
  prof.OnThreadEnd(t);

  ProfileSnapshot p = prof.Snapshot();
  ASSERT_EQ(p.threads.size(), 1u);
  const ThreadSnapshot& th = Thread(p, t);
  EXPECT_EQ(th.root.name, "worker");
  EXPECT_EQ(th.root.base, (Values{14, 1})) << "start, first entry and end deltas go to the root";
  EXPECT_EQ(Path(th, {"main"}).base, (Values{21, 1}));
  EXPECT_EQ(Path(th, {"main", "parse"}).base, (Values{34, 2}));
  EXPECT_EQ(Path(th, {"main", "parse", "tokenize"}).base, (Values{40, 0}));
  EXPECT_EQ(Path(th, {"main", "parse", "render"}).base, (Values{15, 1}));
  EXPECT_EQ(Path(th, {"main", "parse", "tokenize"}).cumulative, (Values{40, 0}));
  EXPECT_EQ(Path(th, {"main", "parse"}).cumulative, (Values{89, 3}));
  EXPECT_EQ(Path(th, {"main"}).cumulative, (Values{110, 4}));
  EXPECT_EQ(th.root.cumulative, (Values{124, 5})) << "the root's cumulative is every delta read";
  EXPECT_EQ(Path(th, {"main", "parse"}).calls, 1u);
  // Heaviest child first.
  const NodeSnapshot& parse = Path(th, {"main", "parse"});
  ASSERT_EQ(parse.children.size(), 2u);
  EXPECT_EQ(parse.children[0].name, "tokenize");
  EXPECT_EQ(parse.children[1].name, "render");
}

TEST(RuntimeProfiler, SameMethodUnderDifferentCallersIsADifferentNode) {
  FakeMetricsSource src;
  RuntimeProfiler prof(src, kMetrics);
  RuntimeThreadId t = prof.OnThreadStart("w", 100);
  for (const char* caller : {"a", "b", "a"}) {
    prof.OnMethodEnter(t, caller);
    prof.OnMethodEnter(t, "leaf");
    src.Add(100, {caller[0] == 'a' ? 10u : 100u, 0});
    prof.OnMethodExit(t);
    prof.OnMethodExit(t);
  }
  ProfileSnapshot p = prof.Snapshot();
  const ThreadSnapshot& th = Thread(p, t);
  EXPECT_EQ(Path(th, {"a"}).calls, 2u);
  EXPECT_EQ(Path(th, {"a", "leaf"}).calls, 2u) << "re-entering the same path reuses its node";
  EXPECT_EQ(Path(th, {"a", "leaf"}).base, (Values{20, 0}));
  EXPECT_EQ(Path(th, {"b", "leaf"}).base, (Values{100, 0}));
  EXPECT_EQ(th.root.children.size(), 2u);
}

TEST(RuntimeProfiler, ReusedTidChargesThePreviousThreadByDefault) {
  FakeMetricsSource src;
  RuntimeProfiler prof(src, kMetrics);  // kChargePrevious is the default
  RuntimeThreadId a = prof.OnThreadStart("a", 100);
  prof.OnMethodEnter(a, "work");
  src.Add(100, {50, 1});  // ran since a's last event, before b started
  RuntimeThreadId b = prof.OnThreadStart("b", 100);
  EXPECT_EQ(prof.ThreadOnKernelTid(100), b) << "the table entry is overwritten";

  src.Add(100, {8, 0});
  prof.OnMethodEnter(b, "other");
  {
    ProfileSnapshot p = prof.Snapshot();
    EXPECT_EQ(Path(Thread(p, a), {"work"}).base, (Values{50, 1}));
    EXPECT_EQ(Thread(p, a).termination, Termination::kTidReused);
    EXPECT_TRUE(Thread(p, a).terminated());
    EXPECT_EQ(Thread(p, b).root.base, (Values{8, 0})) << "b gets only what followed its start";
    EXPECT_FALSE(Thread(p, b).terminated());
  }

  // a's end arrives late: it is charged to a's last method.
  src.Add(100, {4, 0});
  prof.OnThreadEnd(a);
  ProfileSnapshot p = prof.Snapshot();
  EXPECT_EQ(Path(Thread(p, a), {"work"}).base, (Values{54, 1}));
  EXPECT_EQ(Thread(p, a).termination, Termination::kTidReused) << "the first reason stays";
  EXPECT_EQ(Path(Thread(p, b), {"other"}).base, (Values{0, 0}));
  EXPECT_EQ(prof.ThreadOnKernelTid(100), b) << "a's end must not unbind its successor";
}

TEST(RuntimeProfiler, ReusedTidChargesTheNewThreadUnderChargeNew) {
  FakeMetricsSource src;
  RuntimeProfiler prof(src, kMetrics, ReusePolicy::kChargeNew);
  RuntimeThreadId a = prof.OnThreadStart("a", 100);
  prof.OnMethodEnter(a, "work");
  src.Add(100, {50, 1});
  RuntimeThreadId b = prof.OnThreadStart("b", 100);
  EXPECT_EQ(prof.ThreadOnKernelTid(100), b);
  prof.OnMethodEnter(b, "other");
  src.Add(100, {4, 0});
  prof.OnThreadEnd(a);  // late: the tid's delta is now b's

  ProfileSnapshot p = prof.Snapshot();
  EXPECT_EQ(Path(Thread(p, a), {"work"}).base, (Values{0, 0}));
  EXPECT_EQ(Thread(p, a).termination, Termination::kTidReused);
  EXPECT_EQ(Thread(p, b).root.base, (Values{50, 1}));
  EXPECT_EQ(Path(Thread(p, b), {"other"}).base, (Values{4, 0}));
  EXPECT_EQ(prof.ThreadOnKernelTid(100), b);
}

TEST(RuntimeProfiler, ThreadEndChargesFlagsAndUnbinds) {
  FakeMetricsSource src;
  RuntimeProfiler prof(src, kMetrics);
  RuntimeThreadId a = prof.OnThreadStart("a", 100);
  prof.OnMethodEnter(a, "work");
  src.Add(100, {9, 0});
  prof.OnThreadEnd(a);
  EXPECT_EQ(prof.ThreadOnKernelTid(100), std::nullopt);

  // A thread that ended cleanly is not "reused": the next one on its tid
  // gets everything read at its start, and a's late events are ignored.
  src.Add(100, {6, 0});
  RuntimeThreadId b = prof.OnThreadStart("b", 100);
  prof.OnMethodEnter(a, "late");
  prof.OnMethodExit(a);
  prof.OnThreadEnd(a);

  ProfileSnapshot p = prof.Snapshot();
  EXPECT_EQ(Thread(p, a).termination, Termination::kEnded);
  EXPECT_EQ(Path(Thread(p, a), {"work"}).base, (Values{9, 0}));
  EXPECT_EQ(Thread(p, a).root.children.size(), 1u);
  EXPECT_EQ(Thread(p, b).root.base, (Values{6, 0}));
  EXPECT_FALSE(Thread(p, b).terminated());
  EXPECT_EQ(p.ignored_events, 3u);
}

TEST(RuntimeProfiler, PollChargesTheCurrentNodeAndKeepsUnattributedDeltas) {
  FakeMetricsSource src;
  RuntimeProfiler prof(src, kMetrics);
  RuntimeThreadId a = prof.OnThreadStart("a", 100);
  RuntimeThreadId b = prof.OnThreadStart("b", 200);
  prof.OnMethodEnter(a, "outer");
  prof.OnMethodEnter(a, "inner");
  src.Add(100, {11, 1});
  src.Add(200, {22, 2});
  src.Add(300, {33, 3});  // no runtime thread on 300
  src.Add(301, {1, 0});
  ASSERT_TRUE(prof.Poll().ok());
  // Nothing is charged twice: the drain zeroed what it returned.
  src.Add(100, {1, 0});
  prof.OnMethodExit(a);

  ProfileSnapshot p = prof.Snapshot();
  EXPECT_EQ(Path(Thread(p, a), {"outer", "inner"}).base, (Values{12, 1}));
  EXPECT_EQ(Thread(p, b).root.base, (Values{22, 2}));
  EXPECT_EQ(p.unattributed, (Values{34, 3}));
  EXPECT_EQ(p.unattributed_deltas, 2u);
}

TEST(RuntimeProfiler, PollEndsTheRuntimeThreadOfAnExitedKernelThread) {
  FakeMetricsSource src;
  RuntimeProfiler prof(src, kMetrics);
  RuntimeThreadId a = prof.OnThreadStart("a", 100);
  prof.OnMethodEnter(a, "work");
  src.Add(100, {7, 1});
  src.Exit(100);
  ASSERT_TRUE(prof.Poll().ok());
  EXPECT_EQ(prof.ThreadOnKernelTid(100), std::nullopt);
  prof.OnMethodExit(a);  // ignored: the kernel thread is gone

  ProfileSnapshot p = prof.Snapshot();
  EXPECT_EQ(Thread(p, a).termination, Termination::kKernelExited);
  EXPECT_EQ(Path(Thread(p, a), {"work"}).base, (Values{7, 1}));
  EXPECT_EQ(p.ignored_events, 1u);
}

TEST(RuntimeProfiler, ANewKernelThreadOnAnOldTidIsNotAReuse) {
  FakeMetricsSource src;
  RuntimeProfiler prof(src, kMetrics);  // kChargePrevious
  RuntimeThreadId a = prof.OnThreadStart("a", 100);
  prof.OnMethodEnter(a, "work");
  // a's kernel thread exits unseen; the OS gives tid 100 to a new one.
  src.NewKernelThread(100, 42);
  src.Add(100, {5, 0});
  RuntimeThreadId b = prof.OnThreadStart("b", 100);

  ProfileSnapshot p = prof.Snapshot();
  EXPECT_EQ(Path(Thread(p, a), {"work"}).base, (Values{0, 0}))
      << "another kernel thread's delta must not go to a";
  EXPECT_EQ(Thread(p, a).termination, Termination::kKernelExited);
  EXPECT_EQ(Thread(p, b).root.base, (Values{5, 0}));
  EXPECT_EQ(prof.ThreadOnKernelTid(100), b);
}

TEST(RuntimeProfiler, ReadFailuresAreCountedAndTheTreeStillFollowsEvents) {
  FakeMetricsSource src;
  RuntimeProfiler prof(src, kMetrics);
  src.FailWith(ENODATA);
  RuntimeThreadId t = prof.OnThreadStart("t", 100);
  prof.OnMethodEnter(t, "m");
  auto polled = prof.Poll();
  ASSERT_FALSE(polled.ok());
  EXPECT_EQ(polled.error().code().value(), ENODATA);

  src.FailWith(0);
  src.Add(100, {3, 0});  // a failed read zeroes nothing: it comes with the next one
  prof.OnMethodExit(t);
  ProfileSnapshot p = prof.Snapshot();
  EXPECT_EQ(p.read_errors, 3u);
  EXPECT_EQ(p.last_error, "fake drain failed");
  EXPECT_EQ(Path(Thread(p, t), {"m"}).base, (Values{3, 0}));
  EXPECT_EQ(prof.ThreadOnKernelTid(100), t);
}

TEST(RuntimeProfiler, UnknownIdsAndUnbalancedExitsAreIgnored) {
  FakeMetricsSource src;
  RuntimeProfiler prof(src, kMetrics);
  prof.OnMethodEnter(RuntimeThreadId{7}, "x");
  prof.OnThreadEnd(RuntimeThreadId{0});
  RuntimeThreadId t = prof.OnThreadStart("t", 100);
  src.Add(100, {2, 0});
  prof.OnMethodExit(t);  // no method to leave: the delta stays on the root
  ProfileSnapshot p = prof.Snapshot();
  EXPECT_EQ(p.ignored_events, 3u);
  EXPECT_EQ(Thread(p, t).root.base, (Values{2, 0}));
}

TEST(RuntimeProfiler, KernelTidZeroMeansTheCallingThread) {
  FakeMetricsSource src;
  RuntimeProfiler prof(src, kMetrics);
  RuntimeThreadId t = prof.OnThreadStart("self", 0);
  EXPECT_EQ(prof.ThreadOnKernelTid(static_cast<uint32_t>(::gettid())), t);
}

// The last n whitespace-separated words of a line, joined by one space.
std::string LastWords(const std::string& line, size_t n) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  std::string out;
  for (size_t i = words.size() > n ? words.size() - n : 0; i < words.size(); ++i)
    out += (out.empty() ? "" : " ") + words[i];
  return out;
}

TEST(RuntimeProfiler, TextShowsTheTreeColumnsAndTerminatedThreads) {
  FakeMetricsSource src;
  RuntimeProfiler prof(src, kMetrics);
  RuntimeThreadId a = prof.OnThreadStart("alpha", 100);
  prof.OnMethodEnter(a, "parse");
  prof.OnMethodEnter(a, "lex");
  src.Add(100, {1234, 5});
  prof.OnMethodExit(a);
  src.Add(100, {66, 0});
  prof.OnThreadStart("beta", 100);  // alpha: terminated by reuse
  src.Add(999, {7, 0});
  ASSERT_TRUE(prof.Poll().ok());

  std::string text = prof.ToText();
  auto line_with = [&text](const std::string& needle) {
    size_t at = text.find(needle);
    if (at == std::string::npos) return std::string();
    size_t begin = text.rfind('\n', at);
    begin = begin == std::string::npos ? 0 : begin + 1;
    return text.substr(begin, text.find('\n', at) - begin);
  };
  EXPECT_NE(text.find("2 runtime threads (1 terminated)"), std::string::npos) << text;
  EXPECT_NE(line_with("name").find("time_ns base"), std::string::npos) << text;
  EXPECT_NE(line_with("name").find("dispatches cum"), std::string::npos) << text;
  EXPECT_NE(line_with("alpha").find("[terminated: tid-reused]"), std::string::npos) << text;
  EXPECT_EQ(line_with("beta").find("terminated"), std::string::npos) << text;
  // Indentation follows depth; columns: time base, time cum, dispatch base, cum.
  EXPECT_EQ(line_with("parse").rfind("  parse (1 call)", 0), 0u) << text;
  EXPECT_EQ(line_with("lex").rfind("    lex (1 call)", 0), 0u) << text;
  EXPECT_EQ(LastWords(line_with("parse"), 4), "66 1300 0 5") << text;
  EXPECT_EQ(LastWords(line_with("lex"), 4), "1234 1234 5 5") << text;
  EXPECT_EQ(LastWords(line_with("alpha"), 4), "0 1300 0 5") << text;
  EXPECT_NE(line_with("unattributed").find("(1 deltas)"), std::string::npos) << text;
  EXPECT_EQ(LastWords(line_with("unattributed"), 4), "7 7 0 0") << text;
}

TEST(RuntimeProfiler, JsonParsesBackWithTheWholeTree) {
  FakeMetricsSource src;
  RuntimeProfiler prof(src, kMetrics, ReusePolicy::kChargeNew);
  RuntimeThreadId a = prof.OnThreadStart("al\"pha", 100);
  prof.OnMethodEnter(a, "parse");
  prof.OnMethodEnter(a, "lex");
  src.Add(100, {10, 1});
  prof.OnMethodExit(a);
  src.Add(100, {5, 0});
  prof.OnMethodExit(a);
  prof.OnThreadEnd(a);
  src.Add(999, {7, 2});
  ASSERT_TRUE(prof.Poll().ok());

  const std::string json = prof.ToJson();
  std::string error;
  auto v = ParseJson(json, &error);
  ASSERT_TRUE(v) << error << ": " << json;
  const auto& doc = *v;
  EXPECT_EQ(doc.at("format_version").get<int>(), tprof::kJsonFormatVersion);
  ASSERT_EQ(doc.at("metrics").size(), 2u);
  EXPECT_EQ(doc.at("metrics")[0].get<std::string>(), "time_ns");
  EXPECT_EQ(doc.at("reuse_policy").get<std::string>(), "charge-new");
  ASSERT_EQ(doc.at("threads").size(), 1u);
  const auto& th = doc.at("threads")[0];
  EXPECT_EQ(th.at("id").get<double>(), 1);
  EXPECT_EQ(th.at("name").get<std::string>(), "al\"pha");
  EXPECT_EQ(th.at("kernel_tid").get<double>(), 100);
  EXPECT_TRUE(th.at("terminated").get<bool>());
  EXPECT_EQ(th.at("termination").get<std::string>(), "ended");
  EXPECT_EQ(th.at("cumulative").at("time_ns").get<double>(), 15);
  ASSERT_EQ(th.at("methods").size(), 1u);
  const auto& parse = th.at("methods")[0];
  EXPECT_EQ(parse.at("name").get<std::string>(), "parse");
  EXPECT_EQ(parse.at("calls").get<double>(), 1);
  EXPECT_EQ(parse.at("base").at("time_ns").get<double>(), 5);
  EXPECT_EQ(parse.at("cumulative").at("time_ns").get<double>(), 15);
  EXPECT_EQ(parse.at("cumulative").at("dispatches").get<double>(), 1);
  ASSERT_EQ(parse.at("methods").size(), 1u);
  EXPECT_EQ(parse.at("methods")[0].at("base").at("time_ns").get<double>(), 10);
  EXPECT_TRUE(parse.at("methods")[0].at("methods").empty());
  EXPECT_EQ(doc.at("unattributed").at("deltas").get<double>(), 1);
  EXPECT_EQ(doc.at("unattributed").at("values").at("dispatches").get<double>(), 2);
  EXPECT_EQ(doc.at("read_errors").get<double>(), 0);
  EXPECT_EQ(doc.at("ignored_events").get<double>(), 0);
}

TEST(RuntimeProfiler, ConcurrentEventsAndPollsLoseNothing) {
  FakeMetricsSource src;
  RuntimeProfiler prof(src, kMetrics);
  constexpr int kThreads = 8;
  constexpr int kCalls = 500;
  std::vector<RuntimeThreadId> ids(kThreads);
  std::vector<std::thread> workers;
  for (int i = 0; i < kThreads; ++i) {
    workers.emplace_back([&, i] {
      uint32_t tid = 100 + static_cast<uint32_t>(i);
      ids[i] = prof.OnThreadStart("w" + std::to_string(i), tid);
      for (int c = 0; c < kCalls; ++c) {
        src.Add(tid, {1, 0});
        prof.OnMethodEnter(ids[i], "m");
        src.Add(tid, {1, 1});
        prof.OnMethodExit(ids[i]);
      }
      prof.OnThreadEnd(ids[i]);
    });
  }
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(prof.Poll().ok());
  for (std::thread& w : workers) w.join();
  ASSERT_TRUE(prof.Poll().ok());

  ProfileSnapshot p = prof.Snapshot();
  ASSERT_EQ(p.threads.size(), static_cast<size_t>(kThreads));
  for (RuntimeThreadId id : ids) {
    const ThreadSnapshot& th = Thread(p, id);
    EXPECT_EQ(th.root.cumulative, (Values{2 * kCalls, kCalls})) << th.root.name;
    EXPECT_EQ(Path(th, {"m"}).calls, static_cast<uint64_t>(kCalls));
    EXPECT_EQ(th.termination, Termination::kEnded);
  }
  // Polls may land between an Add and its event: then the delta went to the
  // node on top at the poll, still inside the thread, never unattributed.
  EXPECT_EQ(p.unattributed_deltas, 0u);
}

}  // namespace
