// tprofctl start / stop / record: options, the background recorder's
// process and state files, and the recorded command. The recording itself
// is the library's tprof::Recorder (tprof/recorder.h); this file writes
// its profile and windows.
//
// `start` forks a background recorder that writes its pid to a state file;
// `stop` signals it and waits for its result.
#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "continuous.h"
#include "tprof/device/device.h"
#include "tprof/base/output_file.h"
#include "tprof/analysis/profile.h"
#include "tprof/analysis/profile_file.h"
#include "tprof/device/recorder.h"
#include "tprof/analysis/sample_filter.h"
#include "tprof/device/sampling.h"
#include "dump.h"
#include "filter_cli.h"
#include "held_child.h"
#include "tprof/base/scoped_fd.h"
#include "windows_cli.h"

namespace tprof::cli {

namespace {

// Frames per stack with -g unless --stack-depth says otherwise.
constexpr int kDefaultStackDepth = 64;
// perf's default for --call-graph dwarf.
constexpr uint32_t kDefaultUserStackBytes = 8192;

struct RecordOptions {
  SamplingOptions sampling;
  std::string output = kDefaultProfilePath;
  std::optional<uint32_t> pid;            // -p (record: 0 = the command)
  bool quiet = false;                     // record -q: the file only
  SampleFilter keep;                      // record -t/-C: the threads or CPUs the file keeps
  bool all_cpus = false;                  // -a
  std::optional<uint64_t> period;         // -c: events per sample with -e
  std::string clock = "perf";             // --clock: perf (cpu-clock) or tick
  bool callers = false;                   // -g: whole stacks
  bool call_graph_chosen = false;         // --call-graph given (else -g means cfi)
  std::optional<uint32_t> stack_depth;    // --stack-depth (with -g)
  std::vector<tprof_window_add> windows;  // --window/--profil (windows_cli.h)
  std::vector<std::string> cmd;           // record: -- CMD [ARGS...]
  ContextOptions context;                 // --time-granularity
  DumpOptions report;                     // record: --by, --top, --format
  ContinuousOptions continuous;           // record --continuous
};

// The options start and record share, spelled as perf spells them.
void AddSamplingOptions(CLI::App* sub, RecordOptions& o) {
  sub->add_option("-F,--freq", o.sampling.frequency_hz,
                  "clock samples per second per CPU (default 1000, max " +
                      std::to_string(TPROF_SAMPLING_MAX_HZ) + ")")
      ->transform(Decimal())
      ->check(CLI::Range(1u, static_cast<unsigned>(TPROF_SAMPLING_MAX_HZ)));
  sub->add_option_function<uint32_t>(
         "--buffer-kb", [&o](uint32_t kb) { o.sampling.half_bytes = kb * 1024; }, BufferKbHelp())
      ->transform(Decimal())
      ->check(BufferKb());
  sub->add_option("-p,--pid", o.pid, "sample one process and the processes it creates")
      ->transform(Decimal())
      ->check(CLI::Range(0u, TPROF_PID_ALL - 1));
  sub->add_flag("-a,--all-cpus", o.all_cpus,
                "sample every process on every CPU (needs CAP_PERFMON or CAP_SYS_ADMIN)");
  sub->add_flag("-g,--callers", o.callers,
                "record each sample's whole stack, kernel and user part, for folded stacks, "
                "flame graphs and `dump --children` / `--by caller`: the user part walked by the "
                "module with tables from the binaries' CFI, as --call-graph cfi (frame pointers "
                "only with --call-graph fp)");
  sub->add_option_function<std::string>(
         "--call-graph",
         [&o](const std::string& mode) {
           o.callers = true;
           o.call_graph_chosen = true;
           o.sampling.user_stack_bytes = 0;
           o.sampling.unwind_tables = false;
           if (mode == "fp") return;
           // cfi: the module walks with the tables; copies only where none is loaded yet.
           o.sampling.unwind_tables = mode.rfind("cfi", 0) == 0;
           const size_t kind = o.sampling.unwind_tables ? sizeof("cfi") - 1 : sizeof("dwarf") - 1;
           const std::string size = mode.substr(std::min(mode.size(), kind));
           if ((!o.sampling.unwind_tables && mode.rfind("dwarf", 0) != 0) ||
               (!size.empty() && size[0] != ','))
             throw CLI::ValidationError("--call-graph", "fp, cfi[,BYTES] or dwarf[,BYTES], not " + mode);
           o.sampling.user_stack_bytes = kDefaultUserStackBytes;
           if (size.empty()) return;
           char* end = nullptr;
           const unsigned long n = std::strtoul(size.c_str() + 1, &end, 10);
           if (size.size() == 1 || *end || n < 8 || n > TPROF_MAX_USER_STACK_BYTES || n % 8)
             throw CLI::ValidationError(
                 "--call-graph", "the stack copy is 8.." +
                                     std::to_string(TPROF_MAX_USER_STACK_BYTES) +
                                     " bytes, a multiple of 8, not " + size.substr(1));
           o.sampling.user_stack_bytes = static_cast<uint32_t>(n);
         },
         "as perf: fp (frame pointers, what -g records) or dwarf[,BYTES]: each sample also "
         "copies BYTES (default 8192) of the user stack, walked afterwards with the binaries' "
         "CFI (.eh_frame), so that code built without frame pointers keeps its callers; or "
         "cfi[,BYTES]: the module walks each stack with tables derived from that CFI, "
         "copying BYTES only while a process's tables are not loaded yet")
      ->type_name("fp|cfi[,BYTES]|dwarf[,BYTES]");
  sub->add_option("--stack-depth", o.stack_depth,
                  "frames per stack with -g (1.." + std::to_string(TPROF_MAX_STACK_DEPTH) +
                      ", default " + std::to_string(kDefaultStackDepth) + ")")
      ->transform(Decimal())
      ->check(CLI::Range(1u, static_cast<unsigned>(TPROF_MAX_STACK_DEPTH)));
  sub->add_option_function<std::string>(
      "-e,--event",
      [&o](const std::string& name) {
        if (Status st = ParseSampleEvent(name, &o.sampling); !st)
          throw CLI::ValidationError("--event", st.error().message());
      },
      "sample on a counter's overflow instead of the clock: page-faults, context-switches, "
      "cpu-migrations, task-clock, cycles, instructions, cache-misses, branch-misses, rHEX");
  sub->add_option("--clock", o.clock,
                  "what takes the clock samples: perf (a cpu-clock timer per CPU at -F, the "
                  "default) or tick (the kernel's own scheduler tick at its HZ, 250 on Debian: no "
                  "interrupt of tprof's own; falls back to perf where the tick cannot be hooked)")
      ->check(CLI::IsMember({"perf", "tick"}));
  sub->add_flag("--aggregate", o.sampling.aggregate,
                "count samples in the module per process and address (with -g: per stack, each "
                "stack written once per interval), read a few times a second, instead of a record "
                "for each: far less work a sample; without the per-thread and time context of "
                "`dump --tid/--cpu/--time`");
  sub->add_option("-c,--count,--period", o.period, "events per sample with --event (default 10000)")
      ->transform(Decimal())
      ->check(CLI::Range(uint64_t{1}, UINT64_MAX));
  sub->add_option("-o,--output", o.output, "profile file (default tprof.data)");
  sub->add_option_function<uint32_t>(
         "--time-granularity",
         [&o](uint32_t ms) { o.context.granularity_ns = uint64_t{ms} * 1'000'000; },
         "keep each sample's thread, CPU and time to MS milliseconds (default " +
             std::to_string(kDefaultContextGranularityNs / 1'000'000) +
             ", for `dump --tid/--cpu/--time`; coarser when the table grows past " +
             std::to_string(kDefaultMaxContextEntries) + " entries; 0: keep none)")
      ->transform(Decimal())
      ->check(CLI::Range(0u, 3'600'000u));
  AddWindowOptions(sub, &o.windows);
}

// Checks what the options say together and settles the session's pid;
// `cmd` says whether a command is recorded. Returns 0, or 2 after printing
// the usage error.
int SettleOptions(const char* name, RecordOptions* o, bool cmd) {
  if (o->sampling.event_type != TPROF_SAMPLE_ON_CLOCK) {
    o->sampling.event_period = o->period.value_or(10000);
    o->sampling.frequency_hz = 0;
  } else if (o->period) {
    std::fprintf(stderr, "tprofctl %s: --count/--period goes with --event\n", name);
    return kExitUsage;
  }
  if (o->clock == "tick") {
    if (o->sampling.event_type != TPROF_SAMPLE_ON_CLOCK) {
      std::fprintf(stderr, "tprofctl %s: --clock tick takes clock samples; --event samples on a counter\n", name);
      return kExitUsage;
    }
    if (o->sampling.frequency_hz) {
      std::fprintf(stderr, "tprofctl %s: -F goes with --clock perf: the tick runs at the kernel's HZ\n",
                   name);
      return kExitUsage;
    }
    o->sampling.event_type = TPROF_SAMPLE_ON_TICK;
  }
  if (o->sampling.aggregate) {
    // Counted by the stacks the module walks: with cfi, a copy (a record)
    // only while a process's tables are not loaded; dwarf copies them all.
    if (o->sampling.user_stack_bytes && !o->sampling.unwind_tables) {
      std::fprintf(stderr, "tprofctl %s: --aggregate counts the stacks the module walks; "
                           "--call-graph dwarf copies them for later (use cfi or fp)\n", name);
      return kExitUsage;
    }
    o->context.granularity_ns = 0;  // counts carry no thread or time
  }
  if (o->stack_depth && !o->callers) {
    std::fprintf(stderr, "tprofctl %s: --stack-depth goes with -g/--callers\n", name);
    return kExitUsage;
  }
  if (o->callers) o->sampling.stack_depth = o->stack_depth.value_or(kDefaultStackDepth);
  // -g alone: cfi, its copies cut to what the chosen buffers hold.
  if (o->callers && !o->call_graph_chosen) {
    o->sampling.unwind_tables = true;
    o->sampling.user_stack_bytes = kDefaultUserStackBytes;
    if (o->sampling.half_bytes)
      o->sampling.user_stack_bytes =
          std::min(o->sampling.user_stack_bytes, o->sampling.half_bytes / 4 & ~7u);
  }
  // A record holds at most a quarter of a half (the module's rule).
  if (o->sampling.user_stack_bytes && o->sampling.half_bytes &&
      o->sampling.user_stack_bytes > o->sampling.half_bytes / 4) {
    std::fprintf(stderr,
                 "tprofctl %s: --call-graph's copy of %u bytes needs --buffer-kb %u or more (a sample's "
                 "stack copy fits in a quarter of a half-buffer)\n",
                 name, o->sampling.user_stack_bytes, o->sampling.user_stack_bytes * 4 / 1024);
    return kExitUsage;
  }
  if (o->all_cpus && o->pid) {
    std::fprintf(stderr, "tprofctl %s: -a (every process) and -p (one) exclude each other\n", name);
    return kExitUsage;
  }
  if (o->pid == 0u && !cmd) {
    std::fprintf(stderr, "tprofctl %s: -p 0 (the recorded command) needs -- CMD\n", name);
    return kExitUsage;
  }
  // record -- CMD follows CMD unless -a or -p; start samples every
  // process unless -p. A pid of 0 is filled in with the command's.
  if (o->pid)
    o->sampling.pid = *o->pid;
  else if (cmd && !o->all_cpus)
    o->sampling.pid = 0;
  else
    o->sampling.pid = TPROF_PID_ALL;
  return 0;
}

// The process a thread belongs to (/proc/TID/status's Tgid), 0 if none.
uint32_t ProcessOfThread(uint32_t tid) {
  std::ifstream status("/proc/" + std::to_string(tid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Tgid:", 0) == 0) return static_cast<uint32_t>(std::strtoul(line.c_str() + 5, nullptr, 10));
  return 0;
}

// record -t and -C, as perf's: the module samples the threads' whole
// process and only the chosen CPUs (ABI 1.16), and the file keeps the
// samples of those threads or CPUs (each sample's thread and CPU are in
// the context table; sample_filter.h). -t sets the process; -C without -p or CMD means every
// process, as perf's -C. Returns 0, or the status after printing why not.
int SettleThreadsAndCpus(RecordOptions* o, bool cmd) {
  SampleFilter& keep = o->keep;
  if (keep.tids.empty() && keep.cpus.empty()) return 0;
  if (o->sampling.aggregate) {
    std::fprintf(stderr, "tprofctl record: -t and -C keep samples by their thread and CPU, which "
                         "--aggregate's counts do not carry\n");
    return kExitUsage;
  }
  if (o->context.granularity_ns == 0) {
    std::fprintf(stderr, "tprofctl record: -t and -C keep samples by their thread and CPU, which "
                         "--time-granularity 0 does not record\n");
    return kExitUsage;
  }
  if (!keep.tids.empty()) {
    if (cmd || o->pid || o->all_cpus) {
      std::fprintf(stderr, "tprofctl record: -t (running threads) goes without -p, -a and CMD\n");
      return kExitUsage;
    }
    uint32_t process = 0;
    for (uint32_t tid : keep.tids) {
      const uint32_t of = ProcessOfThread(tid);
      if (of == 0) {
        std::fprintf(stderr, "tprofctl record: no thread %u\n", tid);
        return 1;
      }
      if (process != 0 && of != process) {
        std::fprintf(stderr, "tprofctl record: -t names threads of one process (%u is of %u, "
                             "%u of %u)\n", keep.tids.front(), process, tid, of);
        return kExitUsage;
      }
      process = of;
    }
    o->pid = process;
  }
  if (!CpusExist("record", keep.cpus)) return kExitUsage;
  if (!keep.cpus.empty() && !cmd && !o->pid) o->all_cpus = true;
  o->sampling.cpus = keep.cpus;
  return 0;
}

// SamplingSession::StartPreferringStacks, saying on stderr when the
// module refused stacks. A module before ABI 1.16 samples every CPU for
// -C; the file still keeps only the chosen CPUs' samples.
Expected<SamplingSession> StartSampling(SamplingOptions options, bool cfi_by_default) {
  bool stacks_refused = false;
  auto session = SamplingSession::StartPreferringStacks(options, &stacks_refused);
  // --clock tick where the tick cannot be hooked: today's clock, said so.
  if (!session && session.error().code() == std::errc::not_supported &&
      options.event_type == TPROF_SAMPLE_ON_TICK) {
    const std::string why = session.error().message();
    options.event_type = TPROF_SAMPLE_ON_CLOCK;
    session = SamplingSession::StartPreferringStacks(options, &stacks_refused);
    if (session)
      std::fprintf(stderr, "tprofctl: --clock tick: %s; sampling on the perf clock at %u Hz "
                           "instead (--clock perf)\n",
                   why.c_str(), session->config().frequency_out);
  }
  // Plain -g on a module before ABI 1.19: frame pointers, as before.
  if (!session && session.error().code() == std::errc::not_supported && cfi_by_default &&
      options.unwind_tables) {
    options.unwind_tables = false;
    options.user_stack_bytes = 0;
    session = SamplingSession::StartPreferringStacks(options, &stacks_refused);
    if (session)
      std::fprintf(stderr, "tprofctl: the module cannot walk stacks with CFI tables (older than "
                           "ABI 1.19): -g walks frame pointers\n");
  }
  if (!session && session.error().code() == std::errc::not_supported && !options.cpus.empty()) {
    options.cpus.clear();
    session = SamplingSession::StartPreferringStacks(options, &stacks_refused);
    if (session)
      std::fprintf(stderr, "tprofctl: the module samples every CPU (older than ABI 1.16); the "
                           "file keeps the chosen CPUs' samples\n");
  }
  if (session && stacks_refused)
    std::fprintf(stderr, "tprofctl: the module refused whole stacks (older than ABI 1.8?): "
                         "recording callers only\n");
  return session;
}

// Follows a process recorded with `record -p PID` (no command): when it
// exits, SIGTERM to this process ends the recording, as a user's would.
class ExitWatcher {
 public:
  explicit ExitWatcher(pid_t pid)
      : pidfd_(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))),
        thread_([this](std::stop_token stop) {
          pollfd p{pidfd_.get(), POLLIN, 0};
          while (!stop.stop_requested())
            if (::poll(&p, 1, 200) > 0) {
              ::kill(::getpid(), SIGTERM);
              return;
            }
        }) {}

 private:
  ScopedFd pidfd_;
  std::jthread thread_;
};

std::string AbsolutePath(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof(cwd))) return path;
  return std::string(cwd) + "/" + path;
}

// The background recorder's pid and result files, per user.
std::string StateDir() {
  const char* run = std::getenv("XDG_RUNTIME_DIR");
  return run && *run ? run : "/tmp";
}
std::string PidFile() { return StateDir() + "/tprof-recorder." + std::to_string(getuid()) + ".pid"; }
std::string ResultFile() { return PidFile() + ".result"; }

// Whether the pid file's pid is a live recorder: not gone, not a zombie
// nobody reaped, and a tprofctl, so that a stale pid file (the recorder was
// killed) whose pid now belongs to another program never gets it signalled.
// Its /proc entry is read first: a process reaped between a kill(pid, 0)
// and that read would otherwise look alive (seen: `stop` said "did not
// finish within 60 s" a moment after the recorder had finished).
bool RecorderAlive(pid_t pid) {
  if (pid <= 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) {
    // Gone, unless there is no /proc at all: then kill() decides.
    if (::access("/proc/self/stat", R_OK) == 0) return false;
    return ::kill(pid, 0) == 0;
  }
  size_t open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 2 >= line.size())
    return true;
  if (line[close + 2] == 'Z' || line[close + 2] == 'X') return false;  // exited
  std::string self;
  std::getline(std::ifstream("/proc/self/comm"), self);
  return self.empty() || line.compare(open + 1, close - open - 1, self) == 0;
}

// Writes what a finished recording produced: the profile, with its
// windows. SIGINT/SIGTERM stay blocked from the end of Recorder::Run()
// until it is written; one that came meanwhile asked for the stop that
// already happened, and is dropped so that the summary and the report
// still print.
Status WriteRecording(const Profile& profile, const std::string& output) {
  Status st = WriteProfile(profile, output);
  DiscardPendingStopSignals();
  BlockStopSignals(false);
  return st;
}

void PrintSummary(const Profile& p, const std::string& path) {
  std::printf("tprofctl: profile written to %s: %" PRIu64 " samples, %" PRIu64
              " lost\n",
              path.c_str(), p.TotalSamples(), p.TotalLostSamples());
  if (auto it = p.attributes.find(kLeftAtSetuidExec); it != p.attributes.end())
    std::printf("tprofctl: %s process(es) exec'd a setuid or privileged program and left the "
                "profile there (as perf: without CAP_PERFMON such an image is not observed)\n",
                it->second.c_str());
}

void WriteResult(const std::string& text) {
  std::ofstream(ResultFile()) << text;
}

int RunStart(RecordOptions o) {
  if (int rc = SettleOptions("start", &o, false)) return rc;
  o.output = AbsolutePath(o.output);
  // As perf: an output that cannot be written fails now, not at `stop`.
  if (Status st = CheckWritable(o.output); !st) return ReportError(st.error());

  // A pipe tells the caller whether the background recorder got going.
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) return ReportError(Error::FromErrno(errno, "pipe"));
  pid_t pid = ::fork();
  if (pid < 0) return ReportError(Error::FromErrno(errno, "fork"));
  if (pid > 0) {
    ::close(ready[1]);
    char buf[1024] = {};
    ssize_t n = ::read(ready[0], buf, sizeof(buf) - 1);
    ::close(ready[0]);
    ::waitpid(pid, nullptr, 0);  // the intermediate child exits at once
    if (n > 0 && buf[0] == '+') {
      std::printf("tprofctl: recording (%s); `tprofctl stop` writes %s\n", buf + 1,
                  o.output.c_str());
      return 0;
    }
    std::fprintf(stderr, "tprofctl: %s\n", n > 0 ? buf + 1 : "the recorder died while starting");
    return 1;
  }
  // Intermediate child: detach, then the recorder proper. `tprofctl stop`
  // may signal the recorder as soon as the caller has seen "ready", before
  // its event loop handles SIGTERM: until then the stop signals wait
  // (blocked, so pending), and Recorder::Run unblocks them once its
  // signal_set is installed. (A stop racing a start killed the recorder
  // with no profile: seen once in the 6.12 guest.)
  ::close(ready[0]);
  BlockStopSignals(true);
  ::setsid();
  pid_t daemon = ::fork();
  if (daemon != 0) _exit(daemon < 0 ? 1 : 0);
  auto fail = [&](const std::string& msg) {
    std::string m = "-" + msg;
    (void)!::write(ready[1], m.data(), m.size());
    _exit(1);
  };
  {
    std::ifstream existing(PidFile());
    pid_t other = 0;
    if (existing >> other && RecorderAlive(other))
      fail("a recorder is already running (pid " + std::to_string(other) +
           "): `tprofctl stop` it first");
  }
  auto with_hint = [&](const Error& e, Doing doing) {
    std::string hint = Hint(e, doing);
    return e.message() + (hint.empty() ? "" : "\ntprofctl: " + hint);
  };
  const Doing doing = o.sampling.pid == TPROF_PID_ALL ? Doing::kAllCpus : Doing::kSampling;
  auto session = StartSampling(o.sampling, o.callers && !o.call_graph_chosen);
  if (!session) fail(with_hint(session.error(), doing));
  if (Status st = AddWindows(session->fd(), o.windows); !st)
    fail(with_hint(st.error(), Doing::kSampling));
  std::ofstream(PidFile()) << ::getpid() << "\n";
  ::unlink(ResultFile().c_str());
  int devnull = ::open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    ::close(devnull);
  }
  std::string started = "+pid " + std::to_string(::getpid()) + ", " +
                        (o.sampling.pid == TPROF_PID_ALL ? std::string("all processes")
                                                         : "process " + std::to_string(o.sampling.pid));
  (void)!::write(ready[1], started.data(), started.size());
  ::close(ready[1]);

  Recorder recorder(std::move(*session));
  recorder.SetContextOptions(o.context);
  auto profile = recorder.Run();
  Status st = profile ? WriteRecording(*profile, o.output) : Status(profile.error());
  if (st) {
    std::ostringstream r;
    r << "ok " << o.output << " " << profile->TotalSamples() << " " << profile->TotalLostSamples()
      << "\n";
    WriteResult(r.str());
  } else {
    WriteResult("error " + st.error().message() + "\n");
  }
  ::unlink(PidFile().c_str());
  _exit(st ? 0 : 1);
}

int RunStop(bool force) {
  if (force) {
    // Whoever's session it is (an administrator's tool): no profile here.
    auto dev = OpenDeviceOrReport(Doing::kSampling);
    if (!dev) return 1;
    if (auto st = dev->StopAnySampling(); !st) return ReportError(st.error(), Doing::kSampling);
    std::printf("tprofctl: the sampling session was stopped\n");
    return 0;
  }
  std::ifstream in(PidFile());
  pid_t pid = 0;
  if (!(in >> pid) || !RecorderAlive(pid)) {
    if (pid > 0) {  // it ends by removing the file: this one died (was killed)
      std::fprintf(stderr,
                   "tprofctl: no recorder is running: the last one (pid %d) ended without "
                   "`tprofctl stop` and wrote no profile (was it killed?); start one with "
                   "`tprofctl start`\n",
                   pid);
      ::unlink(PidFile().c_str());
    } else {
      std::fprintf(stderr, "tprofctl: no recorder is running (start one with `tprofctl start`)\n");
    }
    return 1;
  }
  if (::kill(pid, SIGTERM) != 0) return ReportError(Error::FromErrno(errno, "signalling the recorder"));
  // It flushes, snapshots symbols and writes the file: allow it time.
  bool alive = true;
  for (int i = 0; i < 1200 && (alive = RecorderAlive(pid)); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (alive && (alive = RecorderAlive(pid))) {
    std::fprintf(stderr, "tprofctl: the recorder (pid %d) did not finish within 60 s\n", pid);
    return 1;
  }
  std::ifstream result(ResultFile());
  std::string status, rest;
  result >> status;
  std::getline(result, rest);
  if (status == "ok") {
    std::istringstream r(rest);
    std::string path;
    uint64_t taken = 0, lost = 0;
    r >> path >> taken >> lost;
    std::printf("tprofctl: profile written to %s: %" PRIu64 " samples, %" PRIu64 " lost\n",
                path.c_str(), taken, lost);
    return 0;
  }
  std::fprintf(stderr, "tprofctl: the recorder failed:%s\n",
               rest.empty() ? " (no result; was it killed?)" : rest.c_str());
  return 1;
}

// record's exit code with a command: the command's, as a shell gives it
// (0 if the recording was stopped before it exited).
int CommandExitCode(const Recorder& recorder) {
  const int status = recorder.child_status() < 0 ? 0 : recorder.child_status();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int RunRecord(RecordOptions o) {
  const bool has_cmd = !o.cmd.empty();
  if (int rc = SettleThreadsAndCpus(&o, has_cmd)) return rc;
  if (!has_cmd && !o.all_cpus && !o.pid) {
    std::fprintf(stderr, "tprofctl record: give -- CMD [ARGS...], -p PID or -a\n");
    return kExitUsage;
  }
  if (int rc = SettleOptions("record", &o, has_cmd)) return rc;
  if (std::string conflict = ShapeConflict(o.report); !conflict.empty()) {
    std::fprintf(stderr, "tprofctl record: %s\n", conflict.c_str());
    return kExitUsage;
  }
  const Doing doing = o.sampling.pid == TPROF_PID_ALL ? Doing::kAllCpus : Doing::kSampling;
  if (o.continuous.on && (o.continuous.out_dir.empty() || !o.keep.empty())) {
    std::fprintf(stderr, "tprofctl record: --continuous needs --out-dir DIR (and takes no -t/-C)\n");
    return kExitUsage;
  }
  // As perf: an output that cannot be written fails before CMD runs.
  const std::string written = o.continuous.on ? o.continuous.out_dir + "/.tprof-probe" : o.output;
  if (Status st = CheckWritable(written); !st) return ReportError(st.error());
  // The series' setup (the kernel's symbols) before sampling starts.
  std::optional<ContinuousRecording> continuous;
  if (o.continuous.on) {
    o.continuous.quiet = o.quiet;
    continuous.emplace(o.continuous);
  }

  // The command waits until sampling covers it (held_child.h); one that
  // cannot run ends the recording with nothing written (the last good
  // profile stays).
  std::optional<HeldChild> held;
  pid_t child = 0;
  if (has_cmd) {
    auto forked = HeldChild::Fork(o.cmd);
    if (!forked) return ReportError(forked.error());
    held.emplace(std::move(*forked));
    child = held->pid();
    if (o.sampling.pid == 0) o.sampling.pid = static_cast<uint32_t>(child);
  }
  // The held child exits without running CMD.
  auto abandon_child = [&] { held.reset(); };
  auto session = StartSampling(o.sampling, o.callers && !o.call_graph_chosen);
  if (!session) {
    abandon_child();
    return ReportError(session.error(), doing);
  }
  if (Status st = AddWindows(session->fd(), o.windows, child); !st) {
    abandon_child();
    return ReportError(st.error(), Doing::kSampling);
  }
  // Without a command, a -p target's exit ends the recording (as SIGINT
  // or SIGTERM do); the stop signals wait until Run listens for them.
  std::optional<ExitWatcher> watcher;
  if (!has_cmd && o.pid) {
    BlockStopSignals(true);
    watcher.emplace(static_cast<pid_t>(*o.pid));
  }
  Recorder recorder(std::move(*session));
  recorder.SetContextOptions(o.context);
  if (held) {
    if (int err = held->Release()) {
      std::fprintf(stderr, "tprofctl: cannot run %s: %s; nothing was recorded\n", o.cmd[0].c_str(),
                   std::strerror(err));
      return 127;
    }
  }
  if (continuous) {
    auto result = continuous->Record(recorder, {.child = child});
    watcher.reset();
    if (!result) return ReportError(result.error());
    const int rc = has_cmd ? CommandExitCode(recorder) : 0;
    if (!o.quiet)
      std::printf("tprofctl: %zu interval files, %" PRIu64 " samples, %" PRIu64 " lost, in %s\n",
                  result->files, result->samples, result->lost,
                  o.continuous.out_dir.c_str());
    return result->failed ? 1 : rc;
  }
  auto profile = recorder.Run({.child = child});
  watcher.reset();
  if (!profile) return ReportError(profile.error());
  if (!o.keep.empty()) {  // -t/-C; the file's "filter" attribute says what was kept
    auto kept = FilterProfile(*profile, o.keep);
    if (!kept) return ReportError(kept.error());
    *profile = std::move(*kept);
  }
  if (Status st = WriteRecording(*profile, o.output); !st) return ReportError(st.error());
  const int rc = has_cmd ? CommandExitCode(recorder) : 0;
  if (o.quiet) return rc;
  PrintSummary(*profile, o.output);
  if (rc != 0) std::fprintf(stderr, "tprofctl: %s exited with status %d\n", o.cmd[0].c_str(), rc);
  o.report.input = o.output;
  int drc = RunDump(o.report);
  return rc != 0 ? rc : drc;
}

}  // namespace

void AddRecordCommands(CommandLine& cli) {
  auto start = std::make_shared<RecordOptions>();
  CLI::App* sub = cli.Add(cli.app(), "start",
                          "Starts a background sampling recorder: every process on every CPU "
                          "(CAP_PERFMON), or one process with -p; `tprofctl stop` ends it and "
                          "writes the profile.",
                          [start] { return RunStart(*start); });
  AddSamplingOptions(sub, *start);

  auto force = std::make_shared<bool>(false);
  sub = cli.Add(cli.app(), "stop",
                "Stops the recorder `tprofctl start` began and waits until it has written the "
                "profile.",
                [force] { return RunStop(*force); });
  sub->add_flag("--force", *force,
                "stop the running sampling session whoever owns it (CAP_PERFMON or root); its "
                "owner keeps what it recorded so far");

  auto record = std::make_shared<RecordOptions>();
  sub = cli.Add(cli.app(), "record",
                "Records a command, a process or the machine, then prints the report (as perf "
                "record). `record [OPTIONS] -- CMD [ARGS...]` samples CMD and the processes it creates until it exits (your own "
                "command needs no privileges where kernel.perf_event_paranoid <= 2); -a samples "
                "every process while CMD runs (or, without CMD, until interrupted), -p PID one "
                "running process until it exits or you interrupt (-p 0: CMD, as without -p).",
                [record] { return RunRecord(*record); });
  AddSamplingOptions(sub, *record);
  AddReportOptions(sub, record->report);
  sub->add_option_function<std::string>(
         "-t,--tid", IdListParser("--tid", &record->keep.tids),
         "record these running threads of one process, until it exits or you interrupt (the "
         "process is sampled, the file keeps these threads' samples)")
      ->type_name("TID[,TID...]");
  sub->add_option_function<std::string>(
         "-C,--cpu", IdListParser("--cpu", &record->keep.cpus),
         "record only what runs on these CPUs (ranges as 0-3): every process, or -p's or CMD's "
         "(the other CPUs take no sample)")
      ->type_name("CPU[,CPU...]");
  sub->add_flag("--continuous", record->continuous.on,
                "record until stopped (Ctrl-C, SIGTERM, CMD's exit), writing one gzipped pprof "
                "per --interval into --out-dir (tprof-HOST-TIME.pb.gz, written whole and renamed; "
                "the oldest removed beyond --keep) instead of a profile file and a report");
  sub->add_option("--interval", record->continuous.interval_s,
                  "seconds per file with --continuous (default 60)")
      ->check(CLI::Range(0.1, 86400.0));
  sub->add_option("--out-dir", record->continuous.out_dir,
                  "the directory of --continuous's files (it must exist)");
  sub->add_option("--keep", record->continuous.keep,
                  "files --continuous keeps in --out-dir, the newest (default 100; 0: all)")
      ->transform(Decimal());
  sub->add_flag("-q,--quiet", record->quiet,
                "write the profile and print nothing else: no summary, no report (errors still "
                "print; the exit status is still CMD's)");
  cli.AddCommandTail(sub, &record->cmd, "-- CMD [ARGS...]: the command to run and record");
}

}  // namespace tprof::cli
