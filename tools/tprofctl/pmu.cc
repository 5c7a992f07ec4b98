// tprofctl pmu: PMU programs. `pmu list` shows the events;
// `pmu watch` builds a program from --counter/--threshold/--when/--then,
// runs it on a process (or a command it starts) or on every CPU (-a), prints each event the
// kernel raises as it arrives (Boost.Asio loop on the monitor socket) and
// the totals, with their exactness, at the end.
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <dirent.h>
#include <string>
#include <utility>  // boost/asio/awaitable.hpp needs std::exchange first
#include <vector>

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "commands.h"
#include "tprof/base/event_names.h"
#include "tprof/output/json_format.h"
#include "tprof/device/pmu_program.h"

namespace tprof::cli {

namespace {

struct WatchOptions {
  std::vector<std::string> counters, thresholds, cmd;
  std::vector<std::pair<std::string, std::string>> rules;  // expression, --then
  uint32_t pid = 0, scope = TPROF_PMU_SCOPE_PROCESS;
  bool json = false, rearm = false, all_cpus = false, target = false;
};

// The target's executable is mapped only after exec: the child stops at
// its exec (PTRACE_TRACEME), the program is built against its maps, then
// the child is let go.
pid_t StartStopped(const std::vector<std::string>& cmd) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
  std::vector<char*> argv;
  for (const std::string& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  std::fprintf(stderr, "tprofctl: cannot run %s: %s\n", argv[0], std::strerror(errno));
  ::_exit(127);
}

void PrintEventJson(const tprof_pmu_event& e, const pmu::ProgramSpec& spec) {
  nlohmann::ordered_json values = nlohmann::ordered_json::object();
  for (uint32_t i = 0; i < e.nr_counters && i < spec.counter_names().size(); i++)
    values[spec.counter_names()[i]] = uint64_t(e.values[i]);
  nlohmann::ordered_json j = {{"format_version", kJsonFormatVersion},
                              {"event", e.kind == TPROF_PMU_EVENT_RULE ? "rule" : "threshold"},
                              {"index", uint64_t(e.index)},
                              {"seq", uint64_t(e.seq)},
                              {"lost", uint64_t(e.lost)},
                              {"time_ns", uint64_t(e.time_ns)},
                              {"pid", uint64_t(e.pid)},
                              {"tid", uint64_t(e.tid)},
                              {"cpu", uint64_t(e.cpu)},
                              {"ip", uint64_t(e.ip)},
                              {"addr", uint64_t(e.addr)},
                              {"values", std::move(values)}};
  std::printf("%s\n", j.dump().c_str());
}

void PrintTotals(const tprof_pmu_values& v, const pmu::ProgramSpec& spec, bool json) {
  const auto& names = spec.counter_names();
  if (json) {
    nlohmann::ordered_json totals = nlohmann::ordered_json::object();
    for (size_t i = 0; i < names.size(); i++)
      totals[names[i]] = {{"value", uint64_t(v.values[i])},
                          {"exact", bool(v.exact & (1U << i))},
                          {"threshold_fired", uint64_t(v.threshold_fired[i])}};
    nlohmann::ordered_json rules = nlohmann::ordered_json::array();
    for (size_t r = 0; r < spec.rule_texts().size(); r++)
      rules.push_back({{"rule", spec.rule_texts()[r]}, {"fired", uint64_t(v.rule_fired[r])}});
    nlohmann::ordered_json j = {{"format_version", kJsonFormatVersion},
                                {"totals", std::move(totals)},
                                {"rules", std::move(rules)},
                                {"events_sent", uint64_t(v.events_sent)},
                                {"events_lost", uint64_t(v.events_lost)},
                                {"hits_missed", uint64_t(v.hits_missed)},
                                {"exec_left", uint64_t(v.exec_left)}};
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("%-16s %20s  %s\n", "COUNTER", "VALUE", "EXACTNESS");
  for (size_t i = 0; i < names.size(); i++)
    std::printf("%-16s %20" PRIu64 "  %s%s\n", names[i].c_str(), uint64_t(v.values[i]),
                v.exact & (1U << i) ? "exact" : "estimate (hardware: every K events)",
                v.threshold_fired[i] ? (", threshold fired " + std::to_string(v.threshold_fired[i])).c_str() : "");
  for (size_t r = 0; r < spec.rule_texts().size(); r++)
    std::printf("rule %zu %-24s fired %" PRIu64 "%s\n", r, spec.rule_texts()[r].c_str(), uint64_t(v.rule_fired[r]),
                v.armed & (1U << r) ? " (armed its secondary counters)" : "");
  std::printf("events: %" PRIu64 " sent, %" PRIu64 " lost\n", uint64_t(v.events_sent), uint64_t(v.events_lost));
  if (v.hits_missed)  // arm64: the CPU reported an address outside every watched byte
    std::printf("watchpoint hits missed: %" PRIu64 " (counted by no counter; see README, arm64)\n",
                uint64_t(v.hits_missed));
  if (v.exec_left)  // perf's rule: a setuid image is not counted for its old observers
    std::printf("threads that exec'd a setuid or privileged program: %" PRIu64
                " (not counted from that exec on)\n",
                uint64_t(v.exec_left));
}

int RunList(bool all) {
  // From the shared name table, aliases in parentheses.
  std::string software, hardware;
  for (const EventName& e : EventNames()) {
    if (!(e.uses & kUsePmu)) continue;
    std::string& line = e.type == TPROF_METRIC_HARDWARE ? hardware : software;
    std::string aliases = EventAliases(e.name);
    line += " " + std::string(e.name) + (aliases.empty() ? "" : " (" + aliases + ")");
  }
  std::printf("software (exact, every event):\n %s\n"
              "hardware (every K events, NAME:K, default K %" PRIu64 "; where the CPU has a PMU):\n"
              " %s rHEX[:K]\n"
              "breakpoints and watchpoints (exact):\n"
              "  bp:ADDR|SYMBOL   w:ADDR|SYMBOL[/LEN] (writes)   rw:ADDR|SYMBOL[/LEN] (reads and writes)\n"
              "  LEN 1 to 32 bytes at any address (default: the symbol's size, else 8), up to 4 debug\n"
              "  registers per program (an access across two of them counts once per register; on arm64\n"
              "  a threshold, rule, range, arming or --all-cpus takes 3 per watchpoint register, 2 per\n"
              "  breakpoint)\n"
              "data ranges (exact; page-faults, minor-faults, major-faults only): EVENT@data:RANGE counts\n"
              "  the faults whose address is in RANGE (any length; a data symbol is its whole size)\n",
              software.c_str(), pmu::kDefaultHardwarePeriod, hardware.c_str());
  const char* root = "/sys/kernel/tracing/events";
  DIR* d = ::opendir(root);
  if (!d) {
    std::printf("tracepoints: none found (mount tracefs: sudo mount -t tracefs nodev /sys/kernel/tracing)\n");
    return 0;
  }
  size_t n = 0;
  std::vector<std::string> names;
  while (dirent* sys = ::readdir(d)) {
    if (sys->d_name[0] == '.' || sys->d_type != DT_DIR) continue;
    DIR* e = ::opendir((std::string(root) + "/" + sys->d_name).c_str());
    if (!e) continue;
    while (dirent* ev = ::readdir(e))
      if (ev->d_name[0] != '.' && ev->d_type == DT_DIR) {
        n++;
        if (all) names.push_back(std::string(sys->d_name) + ":" + ev->d_name);
      }
    ::closedir(e);
  }
  ::closedir(d);
  std::printf("tracepoints (exact): %zu, as SYSTEM:NAME, e.g. syscalls:sys_enter_getppid%s\n", n,
              all ? "" : " (--all lists them)");
  for (const std::string& s : names) std::printf("  %s\n", s.c_str());
  return 0;
}

int RunWatch(const WatchOptions& o) {
  const std::vector<std::string>& counters = o.counters;
  const std::vector<std::string>& thresholds = o.thresholds;
  const std::vector<std::string>& cmd = o.cmd;
  const auto& rules = o.rules;
  uint32_t pid = o.pid, scope = o.scope;
  const bool json = o.json, rearm = o.rearm, all_cpus = o.all_cpus, target = o.target;
  if (counters.empty() || (all_cpus ? target : (pid == 0) == cmd.empty())) {
    std::fprintf(stderr, "tprofctl pmu watch: give --counter and one of --pid, --tid, -a or -- CMD\n");
    return kExitUsage;
  }
  if (all_cpus) scope = TPROF_PMU_SCOPE_CPUS;
  auto dev = OpenDeviceOrReport(Doing::kPmuProgram);
  if (!dev) return 1;

  pid_t child = 0;
  if (!cmd.empty()) {
    child = StartStopped(cmd);
    int st = 0;
    if (child < 0 || ::waitpid(child, &st, 0) != child || !WIFSTOPPED(st)) {
      std::fprintf(stderr, "tprofctl: %s did not start\n", cmd[0].c_str());
      return 1;
    }
    pid = uint32_t(child);
  }
  auto kill_child = [&] {
    if (child > 0) {
      ::kill(child, SIGKILL);
      ::ptrace(PTRACE_DETACH, child, nullptr, nullptr);
      ::waitpid(child, nullptr, 0);
    }
  };
  // Symbols of a thread: its process's maps; with -a, CMD's (or numbers only).
  auto resolver = all_cpus && pid == 0 ? Expected<pmu::SymbolResolver>(Error::FromErrno(ENOENT, "no target"))
                                       : pmu::SymbolResolver::ForProcess(pid_t(pid));
  pmu::ProgramSpec spec;
  Status st = OkStatus();
  for (const std::string& c : counters)
    if (st) st = spec.AddCounter(c, resolver ? &*resolver : nullptr);
  for (const std::string& t : thresholds)
    if (st) st = spec.AddThreshold(t);
  for (size_t r = 0; r < rules.size() && st; r++) {
    st = spec.AddRule(rules[r].first, rearm ? pmu::Rearm::kOnFalse : pmu::Rearm::kOnce);
    std::string names = rules[r].second;
    for (size_t pos = 0; st && !names.empty() && pos != std::string::npos;) {
      size_t comma = names.find(',', pos);
      st = spec.ArmBy(names.substr(pos, comma == std::string::npos ? comma : comma - pos), r);
      pos = comma == std::string::npos ? comma : comma + 1;
    }
  }
  if (!st) {
    kill_child();
    return ReportError(st.error(), Doing::kPmuSpec);
  }
  // A Ctrl-C sent once the program exists must find the signal_set below.
  HeldStopSignals held({SIGINT, SIGTERM});
  auto prog = pmu::Program::Create(*dev, spec.Build(scope, all_cpus ? 0 : pid));
  if (!prog) {
    kill_child();
    return ReportError(prog.error(), all_cpus ? Doing::kPmuAllCpus : Doing::kPmuProgram);
  }
  auto mon = pmu::Monitor::Open();
  if (!mon) {
    kill_child();
    return ReportError(mon.error(), Doing::kPmuProgram);
  }
  if (Status s = mon->Subscribe(*prog); !s) {
    kill_child();
    return ReportError(s.error());
  }
  if (child > 0) ::ptrace(PTRACE_DETACH, child, nullptr, nullptr);

  auto print = [&](const tprof_pmu_event& e) {
    if (json)
      PrintEventJson(e, spec);
    else
      std::printf("%s\n", pmu::FormatEvent(e, spec).c_str());
    std::fflush(stdout);
  };
  boost::asio::io_context io;
  boost::asio::posix::stream_descriptor sock(io, ::dup(mon->fd()));
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  if (child > 0) signals.add(SIGCHLD);
  held.Release();
  int child_status = 0;
  Status failure = OkStatus();
  std::function<void()> wait_events = [&] {
    sock.async_wait(boost::asio::posix::descriptor_base::wait_read, [&](const boost::system::error_code& ec) {
      if (ec) return;
      if (auto n = mon->Receive(print); !n) {
        failure = n.error();
        io.stop();
        return;
      }
      wait_events();
    });
  };
  std::function<void()> wait_signal = [&] {
    signals.async_wait([&](const boost::system::error_code& ec, int signo) {
      if (ec) return;
      if (signo == SIGCHLD && ::waitpid(child, &child_status, WNOHANG) != child) {
        wait_signal();
        return;
      }
      io.stop();
    });
  };
  // A --pid target that exits: checked once a second.
  boost::asio::steady_timer timer(io);
  std::function<void()> tick = [&] {
    timer.expires_after(std::chrono::seconds(1));
    timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      if (child == 0 && !all_cpus && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) {
        io.stop();
        return;
      }
      tick();
    });
  };
  wait_events();
  wait_signal();
  tick();
  if (child > 0)
    boost::asio::post(io, [&] {
      if (::waitpid(child, &child_status, WNOHANG) == child) io.stop();
    });
  io.run();
  if (!failure) return ReportError(failure.error());
  // What the kernel queued before the end, then the totals.
  while (true) {
    auto n = mon->Wait(std::chrono::milliseconds(200), print);
    if (!n || *n == 0) break;
  }
  auto values = prog->Read();
  if (!values) return ReportError(values.error());
  PrintTotals(*values, spec, json);
  if (child > 0) return WIFEXITED(child_status) ? WEXITSTATUS(child_status) : 128 + WTERMSIG(child_status);
  return 0;
}

}  // namespace

void AddPmuCommand(CommandLine& cli) {
  CLI::App* pmu = AddSubcommand(
      cli.app(),
      "pmu",
      "PMU programs: counters, ranges, thresholds and rules in the kernel. A program has up to 8 counters of one process (and the processes it creates), one thread "
      "or every CPU, each optionally restricted to an address range; thresholds and rules are "
      "evaluated in the kernel at every event and each crossing is printed as it happens, with "
      "every counter's value. Without CAP_PERFMON only your own processes, within "
      "kernel.perf_event_paranoid.");
  pmu->require_subcommand(1);

  auto all = std::make_shared<bool>(false);
  CLI::App* list = cli.Add(*pmu, "list", "the events counters can count",
                           [all] { return RunList(*all); });
  list->add_flag("--all", *all, "also every tracepoint's name");

  auto o = std::make_shared<WatchOptions>();
  CLI::App* watch = cli.Add(*pmu, "watch",
                            "build a program, run it on a process, a thread, a command or every "
                            "CPU, print its events as they come and the totals at the end",
                            [o] { return RunWatch(*o); });
  watch->add_option("-e,--counter", o->counters,
                    "[NAME=]EVENT[@RANGE][@data:RANGE][/K] (without NAME=, the event names the counter: "
                    "page-faults as page_faults, cycles:10000 as cycles); EVENT see `tprofctl pmu list`; RANGE a "
                    "function or data symbol of the target, file.c:func, 0xSTART-0xEND or "
                    "0xSTART+LEN; @RANGE counts events whose instruction address is in it, "
                    "@data:RANGE (page-faults, minor-faults, major-faults) those whose faulting "
                    "address is (both: both must hold); /K, after the last range, also counts K "
                    "equal parts of it (the data range's when there is one)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  watch->add_option("--threshold", o->thresholds,
                    "NAME>=N[/EVERY]: an event when NAME reaches N (then every EVERY)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  // --when and --then pair up in order: each --then arms counters by the
  // --when before it.
  watch->add_option_function<std::string>(
      "--when", [o](const std::string& v) { o->rules.push_back({v, ""}); },
      "a rule, e.g. '3*ins-cyc<0' (CPI > 3): up to 4 counters with integer multipliers, "
      "compared (> >= < <=) with an integer")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->trigger_on_parse();
  watch->add_option_function<std::string>(
      "--then",
      [o](const std::string& v) {
        if (o->rules.empty()) throw CLI::ValidationError("--then", "follows a --when");
        o->rules.back().second = v;
      },
      "counters (comma-separated) that the preceding --when arms: they count only from its "
      "first firing (secondary counters)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->trigger_on_parse();
  watch->add_flag("--rearm", o->rearm, "rules fire again after they were false (default: once)");
  watch->add_flag("--json", o->json, "one JSON object per event and for the totals");
  watch->add_flag("-a,--all-cpus", o->all_cpus,
                  "count on every CPU (every process; events name the task that ran): until CMD "
                  "exits if given (its symbols resolve RANGE), else until interrupted; needs "
                  "CAP_PERFMON");
  auto target = [o](uint32_t scope) {
    return [o, scope](uint32_t pid) {
      o->pid = pid;
      o->scope = scope;
      o->target = true;
    };
  };
  watch->add_option_function<uint32_t>("-p,--pid", target(TPROF_PMU_SCOPE_PROCESS),
                                       "a running process (and the processes it creates)")
      ->transform(Decimal());
  watch->add_option_function<uint32_t>("-t,--tid", target(TPROF_PMU_SCOPE_THREAD),
                                       "a running thread")
      ->transform(Decimal());
  cli.AddCommandTail(watch, &o->cmd, "-- CMD [ARGS...]: a command to start and count");
}

}  // namespace tprof::cli
