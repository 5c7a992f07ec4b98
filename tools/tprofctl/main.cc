// tprofctl: the command-line front end of tprof.
#include <cstdio>
#include <cstring>
#include <string>

#include "commands.h"

namespace {

struct Command {
  const char* name;
  int (*run)(const tprof::cli::Args&);
  const char* summary;
};

constexpr Command kCommands[] = {
    {"status", tprof::cli::RunStatus,
     "show the module's version, state and event counters [--json]"},
    {"metrics", tprof::cli::RunMetrics,
     "turn per-thread metrics on/off, show their state [on --metrics LIST|off|status]"},
    {"threads", tprof::cli::RunThreads,
     "drain and print per-thread metric deltas [--pid PID] [--interval MS --count N] [--json]"},
    {"start", tprof::cli::RunStart,
     "start a background sampling recorder [--freq HZ] [--pid PID] [--callers] [-o FILE]"},
    {"top", tprof::cli::RunTop,
     "live view: the heaviest functions or processes, refreshed [-p PID] [-d SEC] [--by F]"},
    {"stop", tprof::cli::RunStop, "stop the recorder and write the profile (tprof.data)"},
    {"record", tprof::cli::RunRecord, "start, run CMD, stop and dump: record [OPTIONS] -- CMD"},
    {"dump", tprof::cli::RunDump,
     "report a profile [-i FILE] [--by process|symbol] [--pid PID] [--top N] [--format F] "
     "[-o FILE] (F: text, json, folded, pprof)"},
    {"diff", tprof::cli::RunDiff,
     "compare two profiles per function or process: diff A B [--by function|process] "
     "[--pid PID] [--top N] [--format text|json]"},
    {"window", tprof::cli::RunWindow,
     "counting windows saved by start/record --window/--profil [list|show] [-i FILE]"},
    {"pmu", tprof::cli::RunPmu,
     "PMU programs: counters, ranges, thresholds, rules [list | watch --counter ... -- CMD]"},
};

void Usage(FILE* out) {
  std::fprintf(out, "usage: tprofctl COMMAND [OPTIONS]\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(out, "\n`tprofctl COMMAND --help` describes a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    Usage(stdout);
    return 0;
  }
  for (const Command& c : kCommands) {
    if (name == c.name) return c.run(tprof::cli::Args(argv + 2, argv + argc));
  }
  std::fprintf(stderr, "tprofctl: unknown command '%s'\n\n", name.c_str());
  Usage(stderr);
  return 2;
}
