// The recorder's event loop (taken from tprofctl's record.cc so that any
// program can record a profile).
#include "tprof/device/recorder.h"

#include <signal.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <utility>  // boost/asio/awaitable.hpp needs std::exchange first

#include <boost/asio.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include "device/unwind_loader.h"

namespace tprof {

void BlockStopSignals(bool block) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  ::pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, nullptr);
}

void DiscardPendingStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  const timespec now{};
  while (::sigtimedwait(&set, nullptr, &now) > 0) {
  }
}

struct Recorder::State {
  explicit State(SamplingSession s) : session(std::move(s)) {}

  // The number of halves read.
  Expected<size_t> ConsumeNow() {
    auto consume = [&] {
      return session.Consume([&](uint32_t, const tprof_rec_header* h, size_t avail) {
        if (unwind) unwind->Note(h, avail);
        return builder.AddRecord(h, avail) != 0;  // 0: malformed, the rest is unreadable
      });
    };
    auto n = consume();
    if (!unwind || !n) return n;
    // A new process's mappings are written on whichever CPU ran the
    // worker, often one whose half fills rarely: flushed at most every
    // 50 ms, so that its tables are loaded within about that.
    const auto now = std::chrono::steady_clock::now();
    if (unwind->needs_mappings() && !finished && now - last_flush >= std::chrono::milliseconds(50)) {
      last_flush = now;
      if (Status st = session.Flush(); !st) return st.error();
      unwind->Flushed();
      auto more = consume();
      if (!more) return more;
      *n += *more;
    }
    // The new mappings' tables, for the samples to come (none once stopped).
    if (*n && !finished) unwind->Sync();
    return n;
  }

  // AGGREGATE: every CPU's counts since the last read, into the builder.
  // Counted stacks are defined by records written before their counts: the
  // buffers up to the reads (flushed) go to the builder first.
  Status ReadAggregates() {
    const uint32_t flags = session.config().flags;
    if (!(flags & TPROF_SAMPLING_AGGREGATE)) return OkStatus();
    aggregate_reads.resize(session.nr_cpu_ids());
    Status failed = OkStatus();
    for (uint32_t cpu = 0; cpu < session.nr_cpu_ids(); ++cpu) {
      auto& [read, entries] = aggregate_reads[cpu];
      auto r = session.ReadAggregate(cpu, &entries);
      read = r ? *r : tprof_aggregate_read{};
      if (r) continue;
      entries.clear();
      if (r.error().code() == std::errc::invalid_argument) continue;  // not a possible CPU
      failed = r.error();  // the reads before it are counted all the same
      break;
    }
    if (flags & TPROF_SAMPLING_STACKS) {
      if (Status st = session.Flush(); !st) return st;
      if (auto n = ConsumeNow(); !n) return n.error();
    }
    for (uint32_t cpu = 0; cpu < aggregate_reads.size(); ++cpu) {
      auto& [read, entries] = aggregate_reads[cpu];
      if (entries.empty() && !read.overflowed) continue;
      builder.AddAggregate(cpu, read, entries);
      aggregate_overflowed += read.overflowed;
      entries.clear();
    }
    return failed;
  }

  SamplingSession session;
  ProfileBuilder builder;
  // One read per CPU, held while the buffers are read.
  std::vector<std::pair<tprof_aggregate_read, std::vector<tprof_aggregate_entry>>> aggregate_reads;
  uint64_t aggregate_overflowed = 0;
  std::optional<UnwindLoader> unwind;  // TPROF_SAMPLING_USER_CFI
  std::chrono::steady_clock::time_point last_flush{};
  boost::asio::io_context io;
  SnapshotOptions snapshot;
  bool finished = false;
  int child_status = -1;
};

Expected<Recorder> Recorder::Start(const SamplingOptions& options, const std::string& device_path) {
  auto session = SamplingSession::Start(options, device_path);
  if (!session) return session.error();
  return Recorder(std::move(*session));
}

namespace {

// kernel.perf_event_max_sample_rate, "" where it cannot be read.
std::string PerfMaxSampleRate() {
  std::ifstream in("/proc/sys/kernel/perf_event_max_sample_rate");
  unsigned long long hz = 0;
  return in >> hz ? std::to_string(hz) : std::string();
}

}  // namespace

Recorder::Recorder(SamplingSession session)
    : s_(std::make_unique<State>(std::move(session))) {
  if (s_->session.config().flags & TPROF_SAMPLING_USER_CFI) {
    // Tables earlier recordings built are read, not built again.
    auto tables = std::make_shared<UnwindTableCache>(UnwindTableStore::ForUser());
    s_->builder.ShareUnwindTables(tables);
    std::error_code ec;
    s_->builder.SetRecorder(static_cast<uint32_t>(::getpid()),
                            std::filesystem::read_symlink("/proc/self/exe", ec).string());
    s_->unwind.emplace(s_->session.fd(), static_cast<uint32_t>(::getpid()), std::move(tables),
                       !(s_->session.config().flags & TPROF_SAMPLING_USER_STACK));
  }
  if (std::string hz = PerfMaxSampleRate(); !hz.empty())
    s_->builder.SetAttribute(kPerfMaxRateAtStart, hz);
}
Recorder::Recorder(Recorder&&) noexcept = default;
Recorder& Recorder::operator=(Recorder&&) noexcept = default;
Recorder::~Recorder() = default;

int Recorder::child_status() const { return s_->child_status; }
const SamplingSession& Recorder::session() const { return s_->session; }
void Recorder::RequestStop() { s_->io.stop(); }
void Recorder::SetContextOptions(const ContextOptions& context) {
  s_->builder.SetContextOptions(context);
}

void Recorder::SetSnapshotOptions(const SnapshotOptions& snapshot) { s_->snapshot = snapshot; }

Expected<Profile> Recorder::Run(const RecorderRunOptions& options) {
  if (s_->finished) return Error(std::make_error_code(std::errc::invalid_argument),
                                 "the recording has already finished");
  boost::asio::io_context& io = s_->io;
  io.restart();
  const int fd = ::dup(s_->session.fd());
  if (fd < 0) return Error::FromErrno(errno, "dup of the sampling descriptor");
  boost::asio::posix::stream_descriptor device(io, fd);
  std::optional<boost::asio::signal_set> signals;
  const pid_t child = options.child;
  if (options.stop_on_signals || child > 0) {
    signals.emplace(io);
    if (options.stop_on_signals) {
      signals->add(SIGINT);
      signals->add(SIGTERM);
    }
    if (child > 0) signals->add(SIGCHLD);
  }
  // A stop sent while they were blocked is delivered now, to the set.
  if (options.stop_on_signals) BlockStopSignals(false);
  boost::asio::steady_timer timer(io);
  Status failure = OkStatus();

  auto fail = [&](Status st) {
    failure = std::move(st);
    io.stop();
  };
  std::function<void()> wait_device = [&] {
    device.async_wait(boost::asio::posix::descriptor_base::wait_read,
                      [&](const boost::system::error_code& ec) {
                        if (ec) return;
                        if (auto n = s_->ConsumeNow(); !n) return fail(n.error());
                        wait_device();
                      });
  };
  // Every published half wakes the device wait; the timer is a safety net
  // behind it. While its ticks find nothing to read (the device wait got
  // everything) they come at doubling intervals up to 8x poll_interval:
  // each costs the profiled machine a wake-up (on one CPU, the workload's
  // time), and perf's poll has none.
  auto period = options.poll_interval;
  std::function<void()> tick = [&] {
    timer.expires_after(period);
    timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      auto n = s_->ConsumeNow();
      if (!n) return fail(n.error());
      if (Status st = s_->ReadAggregates(); !st) return fail(st);
      period = *n ? options.poll_interval : std::min(period * 2, options.poll_interval * 8);
      tick();
    });
  };
  // The live view's refreshes, on a fixed schedule; when a slow callback
  // overran the next one, that one fires at once and the schedule goes on
  // from then (no burst of refreshes to catch up).
  boost::asio::steady_timer interval_timer(io);
  auto next_interval = std::chrono::steady_clock::now();
  std::function<void()> wait_interval = [&] {
    next_interval = std::max(next_interval + options.interval, std::chrono::steady_clock::now());
    interval_timer.expires_at(next_interval);
    interval_timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      if (Status st = s_->session.Flush(); !st) return fail(st);
      if (auto n = s_->ConsumeNow(); !n) return fail(n.error());
      if (!options.on_interval(s_->builder.profile())) return io.stop();
      wait_interval();
    });
  };
  auto reap = [&] {
    int status = 0;
    if (::waitpid(child, &status, WNOHANG) != child) return false;
    s_->child_status = status;
    return true;
  };
  std::function<void()> wait_signal = [&] {
    signals->async_wait([&](const boost::system::error_code& ec, int signo) {
      if (ec) return;
      if (signo == SIGCHLD && !reap()) {
        wait_signal();  // another child, or a stop/continue
        return;
      }
      io.stop();
    });
  };
  wait_device();
  tick();
  if (signals) wait_signal();
  if (options.on_interval) wait_interval();
  // A child that exited before the signal_set existed sent its SIGCHLD
  // to nobody: look once now.
  if (child > 0)
    boost::asio::post(io, [&] {
      if (reap()) io.stop();
    });
  io.run();
  // Further stops wait (pending) while the caller writes the profile.
  if (options.stop_on_signals) BlockStopSignals(true);
  if (!failure) return failure.error();
  return Finish();
}

Profile Recorder::TakeInterval() {
  // A failed read keeps its counts in the module for the next one.
  (void)s_->ReadAggregates();
  return s_->builder.TakeInterval();
}

Expected<Profile> Recorder::Finish() {
  if (s_->finished) return Error(std::make_error_code(std::errc::invalid_argument),
                                 "the recording has already finished");
  s_->finished = true;
  SamplingSession& session = s_->session;
  ProfileBuilder& builder = s_->builder;
  if (Status st = session.Stop(); !st) return st.error();
  // Everything published after the stop, partial halves included.
  for (int i = 0; i < 2000 && !session.Finished(); ++i) {
    if (auto n = s_->ConsumeNow(); !n) return n.error();
    (void)session.Wait(5);
  }
  if (auto n = s_->ConsumeNow(); !n) return n.error();
  if (Status st = s_->ReadAggregates(); !st) return st.error();
  for (uint32_t cpu = 0; cpu < session.nr_cpu_ids(); ++cpu) {
    CpuBufferTotals t = session.Totals(cpu);
    builder.SetCpuTotals(cpu, t.samples_taken, t.lost_samples, t.lost_records);
  }
  const tprof_sampling_config& c = session.config();
  builder.SetAttribute("frequency_hz", std::to_string(c.frequency_out));
  if (c.event_type == TPROF_SAMPLE_ON_TICK) builder.SetAttribute(kSamplingClock, "tick");
  if (c.flags & TPROF_SAMPLING_AGGREGATE) {
    builder.SetAttribute(kAggregateSlots, std::to_string(c.aggregate_slots));
    builder.SetAttribute(kAggregateOverflowed, std::to_string(s_->aggregate_overflowed));
    if (c.flags & TPROF_SAMPLING_STACKS)
      builder.SetAttribute(kAggregateUndefinedStacks,
                           std::to_string(builder.undefined_stack_key_samples()));
  }
  builder.SetAttribute("half_bytes", std::to_string(c.half_bytes_out));
  builder.SetAttribute("pid", c.pid == TPROF_PID_ALL ? "all" : std::to_string(c.pid));
  if (c.flags & TPROF_SAMPLING_USER_STACK)
    builder.SetAttribute(kUserStackBytes, std::to_string(c.user_stack_bytes));
  if (s_->unwind) {
    const UnwindLoader::Stats& u = s_->unwind->stats();
    builder.SetAttribute(kUnwindTables, std::to_string(u.tables));
    builder.SetAttribute(kUnwindTableBytes, std::to_string(u.table_bytes));
    builder.SetAttribute(kUnwindTablesBuilt, std::to_string(s_->unwind->tables_built()));
    builder.SetAttribute(kUnwindFilesWithout,
                         std::to_string(u.files_without + s_->unwind->files_without()));
    if (u.failures)
      builder.SetAttribute(kUnwindFailures,
                           std::to_string(u.failures) + " (first: " + u.first_failure + ")");
  }
  if (c.pid == TPROF_PID_ALL) builder.SetAttribute(kRecorderPid, std::to_string(::getpid()));
  // Which kernel's symbols and debug files (tprofctl annotate) fit the samples.
  if (struct utsname u; ::uname(&u) == 0) builder.SetAttribute("kernel_release", u.release);
  if (std::string hz = PerfMaxSampleRate(); !hz.empty())
    builder.SetAttribute(kPerfMaxRateAtEnd, hz);
  if (session.malformed_halves())
    builder.SetAttribute("malformed_halves", std::to_string(session.malformed_halves()));
  Profile profile = builder.Finish();
  // The session's counting windows, as they ended (a module without
  // windows refuses the list: a recording without them).
  if (auto windows = ReadWindows(session.fd())) profile.windows = std::move(*windows);
  DropUnsampledProcesses(&profile);
  SnapshotSystemState(&profile, s_->snapshot);
  return profile;
}

}  // namespace tprof
