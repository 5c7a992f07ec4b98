// tprofctl start / stop / record: options, the background recorder's
// process and state files, and the recorded command. The recording itself
// is the library's tprof::Recorder (tprof/recorder.h); this file writes
// its profile and windows.
//
// `start` forks a background recorder that writes its pid to a state file;
// `stop` signals it and waits for its result.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "cli_util.h"
#include "commands.h"
#include "tprof/device.h"
#include "tprof/profile.h"
#include "tprof/profile_file.h"
#include "tprof/recorder.h"
#include "tprof/sampling.h"
#include "windows_cli.h"

namespace tprof::cli {

namespace {

struct RecordOptions {
  SamplingOptions sampling;
  std::string output = kDefaultProfilePath;
  bool pid_given = false;
  std::vector<tprof_window_add> windows;  // --window/--profil (windows_cli.h)
};

void StartUsage(FILE* out, const char* cmd) {
  std::fprintf(out,
               "usage: tprofctl %s [--freq HZ] [--buffer-kb N] [--pid PID] [--callers]\n"
               "                [--event NAME --period N] [-o FILE]%s\n\n"
               "  --freq HZ       clock samples per second per CPU (default 1000, max 100000)\n"
               "  --buffer-kb N   size of each half of a CPU's double buffer (default 64;\n"
               "                  a power of two from 4 to 16384)\n"
               "  --pid PID       sample one process (default: every process, which needs\n"
               "                  CAP_PERFMON or CAP_SYS_ADMIN)\n"
               "  --callers       also record each sample's caller (for folded stacks)\n"
               "  --event NAME    sample on a counter's overflow instead of the clock:\n"
               "                  page-faults, context-switches, cpu-migrations, task-clock,\n"
               "                  cycles, instructions, cache-misses, branch-misses, rHEX\n"
               "  --period N      events per sample with --event (default 10000)\n"
               "  -o FILE         profile file (default tprof.data)\n"
               "  --window SPEC   counting window: kernel:START:LEN:BLOCK or\n"
               "                  pid=PID:START:LEN:BLOCK, saved to FILE.windows\n"
               "  --profil SPEC   profil(2) window PID:OFFSET:SCALE:BUFSIZ[:32]\n"
               "                  (see `tprofctl window --help`)\n",
               cmd, std::strcmp(cmd, "record") == 0 ? " [DUMP OPTIONS] -- CMD [ARGS...]" : "");
}

// Parses the options shared by start and record. Unknown options are left in
// *rest (record passes them to the report). Returns 2 on a usage error.
int ParseRecordOptions(const Args& args, size_t end, RecordOptions* o, Args* rest) {
  std::optional<uint64_t> period;
  for (size_t i = 0; i < end; ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* {
      if (i + 1 >= end) {
        std::fprintf(stderr, "tprofctl: %s needs a value\n", a.c_str());
        return nullptr;
      }
      return &args[++i];
    };
    if (a == "--freq" || a == "--buffer-kb" || a == "--pid" || a == "--period") {
      const std::string* v = value();
      if (!v) return 2;
      auto n = ParseNumber(a, *v);
      if (!n || *n > UINT32_MAX) return 2;
      if (a == "--freq") {
        o->sampling.frequency_hz = static_cast<uint32_t>(*n);
        if (*n == 0 || *n > TPROF_SAMPLING_MAX_HZ) {
          std::fprintf(stderr, "tprofctl: --freq must be 1..%u\n", TPROF_SAMPLING_MAX_HZ);
          return 2;
        }
      } else if (a == "--buffer-kb") {
        o->sampling.half_bytes = static_cast<uint32_t>(*n * 1024);
      } else if (a == "--pid") {
        o->sampling.pid = static_cast<uint32_t>(*n);
        o->pid_given = true;
      } else {
        period = *n;
      }
    } else if (a == "--window" || a == "--profil") {
      const std::string* v = value();
      if (!v || !ParseWindowOption(a, *v, &o->windows)) return 2;
    } else if (a == "--callers") {
      o->sampling.callers = true;
    } else if (a == "--event") {
      const std::string* v = value();
      if (!v) return 2;
      if (Status st = ParseSampleEvent(*v, &o->sampling); !st) {
        std::fprintf(stderr, "tprofctl: %s\n", st.error().message().c_str());
        return 2;
      }
    } else if (a == "-o" || a == "--output") {
      const std::string* v = value();
      if (!v) return 2;
      o->output = *v;
    } else if (rest) {
      rest->push_back(a);
      // Report options with a value travel with it.
      if ((a == "--by" || a == "--top" || a == "--format") && i + 1 < end)
        rest->push_back(args[++i]);
    } else {
      std::fprintf(stderr, "tprofctl: unknown option '%s'\n", a.c_str());
      return 2;
    }
  }
  if (o->sampling.event_type != TPROF_SAMPLE_ON_CLOCK) {
    o->sampling.event_period = period.value_or(10000);
    o->sampling.frequency_hz = 0;
  } else if (period) {
    std::fprintf(stderr, "tprofctl: --period goes with --event\n");
    return 2;
  }
  return 0;
}

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

// Writes what a finished recording produced: the windows beside the
// profile (FILE.windows), then the profile. SIGINT/SIGTERM stay blocked
// from the end of Recorder::Run() until both are written.
Status WriteRecording(const Recorder& recorder, const Profile& profile, const std::string& output) {
  if (Status st = SaveWindows(recorder.session().fd(), output); !st) return st;
  Status st = WriteProfile(profile, output);
  BlockStopSignals(false);
  return st;
}

void PrintSummary(const Profile& p, const std::string& path) {
  std::printf("tprofctl: profile written to %s: %" PRIu64 " samples, %" PRIu64
              " lost\n",
              path.c_str(), p.TotalSamples(), p.TotalLostSamples());
}

void WriteResult(const std::string& text) {
  std::ofstream(ResultFile()) << text;
}

}  // namespace

int RunStart(const Args& args) {
  for (const std::string& a : args)
    if (a == "-h" || a == "--help") return StartUsage(stdout, "start"), 0;
  RecordOptions o;
  if (int rc = ParseRecordOptions(args, args.size(), &o, nullptr)) return StartUsage(stderr, "start"), rc;
  o.output = AbsolutePath(o.output);

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
  auto session = SamplingSession::Start(o.sampling);
  if (!session) fail(session.error().message());
  if (Status st = ApplyWindows(session->fd(), o.windows, 0); !st) fail(st.error().message());
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
  auto profile = recorder.Run();
  Status st = profile ? WriteRecording(recorder, *profile, o.output) : Status(profile.error());
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

int RunStop(const Args& args) {
  if (args.size() == 1 && args[0] == "--force") {
    // Whoever's session it is (an administrator's tool): no profile here.
    auto dev = Device::Open();
    if (!dev) return ReportError(dev.error());
    if (auto st = dev->StopAnySampling(); !st) return ReportError(st.error());
    std::printf("tprofctl: the sampling session was stopped\n");
    return 0;
  }
  if (!args.empty()) {
    bool help = args[0] == "-h" || args[0] == "--help";
    std::fprintf(help ? stdout : stderr,
                 "usage: tprofctl stop [--force]\n\nStops the recorder `tprofctl start` began and "
                 "waits until it has written the profile.\n--force: stop the running sampling "
                 "session whoever owns it (CAP_PERFMON or root); its owner keeps what it "
                 "recorded so far.\n");
    return help ? 0 : 2;
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

int RunRecord(const Args& args) {
  size_t dashes = args.size();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {
      dashes = i;
      break;
    }
    if (args[i] == "-h" || args[i] == "--help") return StartUsage(stdout, "record"), 0;
  }
  if (dashes + 1 >= args.size()) {
    StartUsage(stderr, "record");
    return 2;
  }
  RecordOptions o;
  Args report_args;
  if (int rc = ParseRecordOptions(args, dashes, &o, &report_args)) return rc;

  // The child waits on a pipe so that sampling covers its exec.
  int go[2];
  if (::pipe2(go, O_CLOEXEC) != 0) return ReportError(Error::FromErrno(errno, "pipe"));
  pid_t child = ::fork();
  if (child < 0) return ReportError(Error::FromErrno(errno, "fork"));
  if (child == 0) {
    ::close(go[1]);
    char c;
    if (::read(go[0], &c, 1) != 1) _exit(127);
    std::vector<char*> argv;
    for (size_t i = dashes + 1; i < args.size(); ++i) argv.push_back(const_cast<char*>(args[i].c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "tprofctl: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  ::close(go[0]);
  if (o.pid_given && o.sampling.pid == 0) o.sampling.pid = static_cast<uint32_t>(child);
  auto session = SamplingSession::Start(o.sampling);
  if (!session) {
    ::close(go[1]);
    ::waitpid(child, nullptr, 0);
    return ReportError(session.error());
  }
  if (Status st = ApplyWindows(session->fd(), o.windows, child); !st) {
    ::close(go[1]);
    ::waitpid(child, nullptr, 0);
    return ReportError(st.error());
  }
  Recorder recorder(std::move(*session));
  (void)!::write(go[1], "g", 1);  // the child execs CMD now
  ::close(go[1]);
  auto profile = recorder.Run({.child = child});
  if (!profile) return ReportError(profile.error());
  if (Status st = WriteRecording(recorder, *profile, o.output); !st) return ReportError(st.error());
  PrintSummary(*profile, o.output);
  int status = recorder.child_status() < 0 ? 0 : recorder.child_status();  // -1: stopped first
  int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (rc != 0) std::fprintf(stderr, "tprofctl: %s exited with status %d\n", args[dashes + 1].c_str(), rc);
  Args dump_args = {"-i", o.output};
  dump_args.insert(dump_args.end(), report_args.begin(), report_args.end());
  int drc = RunDump(dump_args);
  return rc != 0 ? rc : drc;
}

}  // namespace tprof::cli
