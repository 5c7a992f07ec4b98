// tprofctl stat: counts a command's events as `perf stat` does (the
// command, its threads and the processes it creates), printed on stderr
// when it exits, with the command's exit status; or, with -p, a running
// process's until it exits or Ctrl-C (or while a command runs).
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio.hpp>

#include "cli_util.h"
#include "commands.h"
#include "held_child.h"
#include "tprof/output/json_format.h"
#include "tprof/base/output_file.h"
#include "tprof/base/scoped_fd.h"
#include "tprof/device/stat.h"

namespace tprof::cli {

namespace {

struct StatOptions {
  std::vector<std::string> events;  // -e lists, as given
  std::optional<std::string> output;
  bool json = false;
  std::optional<uint32_t> pid;  // -p: a running process instead of the command
  bool all_cpus = false;        // -a: every CPU instead of the command
  std::vector<std::string> cmd;
};

// What the counted process cost besides the counters (wait4's rusage):
// known for a command stat ran, not for a -p process (no rusage).
struct CommandEnd {
  int exit_status = 0;  // as a shell reports it: 128 + signal when killed
  double elapsed_s = 0, user_s = 0, system_s = 0;
  rusage usage{};  // the command's and its waited-for children's
  bool has_usage = false;
};

// 1234567 -> "1,234,567", as perf prints counts.
std::string Grouped(uint64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

const StatCount* Find(const std::vector<StatCount>& counts, const char* name) {
  for (const StatCount& c : counts)
    if (c.name == name && c.value) return &c;
  return nullptr;
}

std::string Seconds(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9f", s);
  return buf;
}

// perf stat's table: the count, the event, and after '#' what it means.
// What was counted: the command, or process -p or every CPU (-a; then the
// command, if any, only set how long).
std::string Text(const StatOptions& what, const std::vector<StatCount>& counts, const CommandEnd& end,
                 uint64_t exec_left) {
  std::string command;
  for (const std::string& a : what.cmd) command += (command.empty() ? "" : " ") + a;
  const std::string counted = what.all_cpus ? "'system wide'"
                              : what.pid    ? "process id '" + std::to_string(*what.pid) + "'"
                                            : "'" + command + "'";
  std::string out = "\n Performance counter stats for " + counted + ":\n\n";
  const StatCount* task_clock = Find(counts, "task-clock");
  const double task_s = task_clock ? static_cast<double>(*task_clock->value) / 1e9 : 0;
  const StatCount* cycles = Find(counts, "cycles");
  const StatCount* branches = Find(counts, "branches");
  char line[256];
  for (const StatCount& c : counts) {
    if (!c.value) {
      std::snprintf(line, sizeof line, "%18s      %-30s (%s)\n", "<not supported>", c.name.c_str(),
                    c.error.message().c_str());
      out += line;
      continue;
    }
    std::string note;
    char buf[96];
    if (c.clock) {
      std::snprintf(line, sizeof line, "%18.2f msec %-30s", static_cast<double>(*c.value) / 1e6,
                    c.name.c_str());
      if (c.name == "task-clock" && end.elapsed_s > 0) {
        std::snprintf(buf, sizeof buf, "#  %8.3f CPUs utilized", task_s / end.elapsed_s);
        note = buf;
      }
    } else {
      std::snprintf(line, sizeof line, "%18s      %-30s", Grouped(*c.value).c_str(), c.name.c_str());
      if (c.name == "instructions" && cycles && *cycles->value) {
        std::snprintf(buf, sizeof buf, "#  %8.2f insn per cycle",
                      static_cast<double>(*c.value) / static_cast<double>(*cycles->value));
        note = buf;
      } else if (c.name == "branch-misses" && branches && *branches->value) {
        std::snprintf(buf, sizeof buf, "#  %8.2f%% of all branches",
                      100.0 * static_cast<double>(*c.value) / static_cast<double>(*branches->value));
        note = buf;
      } else if (task_s > 0) {
        std::snprintf(buf, sizeof buf, "#  %8.3f /sec", static_cast<double>(*c.value) / task_s);
        note = buf;
      }
    }
    out += line;
    out += note.empty() ? "" : " " + note;
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";
  }
  out += "\n" + std::string(8, ' ') + Seconds(end.elapsed_s) + " seconds time elapsed\n\n";
  if (end.has_usage) {
    out += std::string(8, ' ') + Seconds(end.user_s) + " seconds user\n";
    out += std::string(8, ' ') + Seconds(end.system_s) + " seconds sys\n\n";
  }
  if (exec_left)
    out += "note: " + std::to_string(exec_left) +
           " thread(s) exec'd a program you may not observe (setuid, setgid or file "
           "capabilities): not counted from that exec on\n";
  return out;
}

std::string Json(const StatOptions& what, const std::vector<StatCount>& counts, const CommandEnd& end,
                 uint64_t exec_left) {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  for (const StatCount& c : counts) {
    nlohmann::ordered_json e = {{"event", c.name}, {"unit", c.clock ? "ns" : ""}};
    if (c.value) {
      e["value"] = *c.value;
    } else {
      e["value"] = nullptr;
      e["error"] = c.error.message();
    }
    events.push_back(std::move(e));
  }
  nlohmann::ordered_json j = {{"format_version", kJsonFormatVersion},
                              {"command", what.cmd},
                              {"exit_status", end.exit_status},
                              {"elapsed_s", end.elapsed_s}};
  if (what.pid) j["pid"] = *what.pid;
  if (what.all_cpus) j["all_cpus"] = true;
  if (end.has_usage) {
    j["user_s"] = end.user_s;
    j["system_s"] = end.system_s;
    // From wait4(): since the fork, so a little more than the counts.
    j["rusage"] = {{"minor_faults", end.usage.ru_minflt},
                   {"major_faults", end.usage.ru_majflt},
                   {"voluntary_switches", end.usage.ru_nvcsw},
                   {"involuntary_switches", end.usage.ru_nivcsw}};
  }
  j["exec_left"] = exec_left;
  j["events"] = std::move(events);
  return j.dump() + "\n";
}

// Waits until process `pidfd` exits (-1: no process) or SIGINT, SIGTERM or
// SIGHUP arrives (perf stat's Ctrl-C); `held` kept them pending until now.
// They are blocked after it, so that a second Ctrl-C cannot cut the counts'
// printing short.
Status WaitForExitOrStop(int pidfd, HeldStopSignals& held) {
  boost::asio::io_context io;
  boost::asio::signal_set stop(io, SIGINT, SIGTERM, SIGHUP);
  held.Release();
  stop.async_wait([&](const boost::system::error_code& ec, int) {
    if (!ec) io.stop();
  });
  std::optional<boost::asio::posix::stream_descriptor> process;
  if (pidfd >= 0) {
    const int fd = ::fcntl(pidfd, F_DUPFD_CLOEXEC, 0);  // the descriptor owns its fd
    if (fd < 0) return Error::FromErrno(errno, "watching the process");
    process.emplace(io, fd);
    process->async_wait(boost::asio::posix::descriptor_base::wait_read,
                        [&](const boost::system::error_code& ec) {
                          if (!ec) io.stop();
                        });
  }
  io.run();
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, sig);
  ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return OkStatus();
}

double Secs(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

int RunStat(const StatOptions& o) {
  if (o.cmd.empty() && !o.pid && !o.all_cpus) {
    std::fprintf(stderr, "tprofctl stat: give -a, -p PID or -- CMD [ARGS...]\n");
    return kExitUsage;
  }
  std::string list;
  for (const std::string& e : o.events) list += (list.empty() ? "" : ",") + e;
  auto events = ParseStatEvents(list.empty() ? std::string(kDefaultStatEvents) : list);
  if (!events) {
    std::fprintf(stderr, "tprofctl stat: %s\n", events.error().message().c_str());
    return kExitUsage;
  }
  // As record: an output that cannot be written fails before CMD runs.
  if (o.output)
    if (Status st = CheckWritable(*o.output); !st) return ReportError(st.error());
  auto dev = OpenDeviceOrReport();
  if (!dev) return 1;
  // -p: the process is held by a pidfd from before the counters, so that
  // its own exit ends the count, never a later process given its pid.
  ScopedFd pidfd;
  if (o.pid) {
    pidfd = ScopedFd(static_cast<int>(::syscall(SYS_pidfd_open, *o.pid, 0)));
    if (!pidfd)
      return ReportError(Error::FromErrno(errno, "process " + std::to_string(*o.pid)),
                         Doing::kPmuProgram);
  }
  std::optional<HeldChild> child;
  if (!o.cmd.empty()) {
    auto forked = HeldChild::Fork(o.cmd);
    if (!forked) return ReportError(forked.error());
    child.emplace(std::move(*forked));
  }
  // Without CMD, a stop signal ends the count; one sent as soon as the
  // counters exist must find it waiting.
  std::optional<HeldStopSignals> held;
  if (!child) held.emplace(std::initializer_list<int>{SIGINT, SIGTERM, SIGHUP});
  auto counters = o.all_cpus ? StatCounters::StartAllCpus(*dev, std::move(*events))
                             : StatCounters::Start(*dev, o.pid ? static_cast<pid_t>(*o.pid)
                                                               : child->pid(),
                                                   std::move(*events));
  if (!counters)
    return ReportError(counters.error(), o.all_cpus ? Doing::kPmuAllCpus : Doing::kPmuProgram);
  const auto start = std::chrono::steady_clock::now();
  CommandEnd end;
  if (child) {
    // As perf stat: Ctrl-C reaches the command, and the counts still print.
    ::signal(SIGINT, SIG_IGN);
    ::signal(SIGQUIT, SIG_IGN);
    if (int err = child->Release()) {
      std::fprintf(stderr, "tprofctl: cannot run %s: %s\n", o.cmd[0].c_str(), std::strerror(err));
      return 127;
    }
    int status = 0;
    rusage ru{};
    while (::wait4(child->pid(), &status, 0, &ru) < 0) {
      if (errno != EINTR) return ReportError(Error::FromErrno(errno, "waiting for the command"));
    }
    end.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (!o.pid && !o.all_cpus) {  // the command is what was counted: its rusage too
      end.has_usage = true;
      end.usage = ru;
      end.user_s = Secs(ru.ru_utime);
      end.system_s = Secs(ru.ru_stime);
    }
  } else if (Status st = WaitForExitOrStop(pidfd.get(), *held); !st) {
    return ReportError(st.error());
  }
  end.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto counts = counters->Read();
  if (!counts) return ReportError(counts.error());
  const std::string out = o.json ? Json(o, *counts, end, counters->exec_left())
                                 : Text(o, *counts, end, counters->exec_left());
  if (o.output) {
    if (Status st = WriteFileAtomically(*o.output, out); !st) return ReportError(st.error());
  } else {
    std::fputs(out.c_str(), stderr);
  }
  return end.exit_status;
}

}  // namespace

void AddStatCommand(CommandLine& cli) {
  auto o = std::make_shared<StatOptions>();
  CLI::App* sub = cli.Add(
      cli.app(), "stat",
      "Counts a command's events (as perf stat): the command, its threads and the processes it "
      "creates, from its exec to its exit; prints them on stderr and exits with the command's "
      "status. With -p, a running process's (its threads and the processes it creates from "
      "then on) until it exits or Ctrl-C, or while CMD runs; with -a, every CPU's (every "
      "task, CAP_PERFMON or root) until Ctrl-C or while CMD runs. Each event is counted exactly (perf's count, no sampling). Your own command "
      "needs no privileges where kernel.perf_event_paranoid <= 2 (then user mode only). An "
      "event this machine cannot count (no hardware PMU, e.g. under QEMU's TCG on x86) shows "
      "as <not supported>.",
      [o] { return RunStat(*o); });
  std::string defaults(kDefaultStatEvents);
  for (size_t at = defaults.find(','); at != std::string::npos; at = defaults.find(',', at + 2))
    defaults.replace(at, 1, ", ");
  sub->add_option("-e,--event", o->events,
                  "events to count, comma-separated, the option repeatable (default " + defaults +
                      "): task-clock, cpu-clock, the software and hardware events of `tprofctl "
                      "pmu list`, rHEX raw events, SYS:NAME tracepoints")
      ->type_name("LIST");
  CLI::Option* pid_option = sub->add_option("-p,--pid", o->pid,
                  "count this running process until it exits or Ctrl-C (or, with CMD, while CMD "
                  "runs), as perf stat -p")
      ->transform(Decimal())
      ->check(CLI::Range(1u, TPROF_PID_ALL - 1));
  sub->add_flag("-a,--all-cpus", o->all_cpus,
                "count every CPU, every task (CAP_PERFMON or root), until Ctrl-C or, with CMD, "
                "while CMD runs, as perf stat -a; a CPU taken offline meanwhile keeps what it "
                "counted")
      ->excludes(pid_option);
  sub->add_option("-o,--output", o->output, "write the counts to FILE instead of stderr")
      ->type_name("FILE");
  sub->add_flag("-j,--json", o->json,
                "the counts as one JSON object: events (value null and an error where not "
                "counted), elapsed, user and system seconds, the command's exit status");
  cli.AddCommandTail(sub, &o->cmd, "-- CMD [ARGS...]: the command to run and count");
}

}  // namespace tprof::cli
