// tprofctl dump: reads a profile (tprof.data) and prints where the CPU went:
// per process (kernel / user / shared library, idle, lost) and per function;
// or exports it: folded stacks, an interactive SVG flame graph, speedscope
// JSON, or pprof.
#include "dump.h"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "filter_cli.h"
#include "tprof/analysis/archive.h"
#include "tprof/analysis/elf_snapshot.h"
#include "tprof/output/flamegraph.h"
#include "tprof/base/output_file.h"
#include "tprof/output/pprof.h"
#include "tprof/analysis/profile_file.h"
#include "tprof/output/report.h"
#include "tprof/output/speedscope.h"
#include "tprof/analysis/symbolizer.h"
#include "tprof/analysis/unresolved.h"

namespace tprof::cli {

namespace {

std::string FormatPercent(double percent) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", percent);
  return buf;
}

}  // namespace

void AddReportOptions(CLI::App* sub, DumpOptions& o) {
  sub->add_option_function<std::string>(
         "--by",
         [&o](const std::string& by) {
           o.report.by = by == "process"  ? ReportBy::kProcess
                         : by == "caller" ? ReportBy::kCaller
                         : by == "thread" ? ReportBy::kThread
                         : by == "cpu"    ? ReportBy::kCpu
                                          : ReportBy::kSymbol;
         },
         "only the process table (process) or only the function tables (symbol); default: "
         "both; or caller: per process, each caller -> callee step of the recorded stacks with "
         "its samples; thread: samples per thread; cpu: samples and losses per CPU")
      ->check(CLI::IsMember({"process", "symbol", "function", "caller", "thread", "cpu"}));
  sub->add_flag_function(
      "--children", [&o](int64_t) { o.report.children = true; },
      "function tables with inclusive samples (the samples whose stack holds the function, as "
      "perf report --children) beside the self samples, sorted by them");
  sub->add_option_function<size_t>(
         "--top", [&o](size_t top) { o.report.top = top; }, "N rows per table (default: all)")
      ->transform(Decimal());
  sub->add_option_function<double>(
         "--percent-limit",
         [&o](double percent) { o.report.percent_limit = percent; },
         "leave out the rows under PCT% (of the process's samples in a function table, of all "
         "samples in the process table), summed per space in a \"(N more functions)\" row; "
         "default " + FormatPercent(kDefaultTextPercentLimit) + " in text, 0 in json")
      ->type_name("PCT")
      ->check(CLI::Range(0.0, 100.0));
  sub->add_option_function<std::string>(
         "--sort",
         [&o](const std::string& key) {
           o.report.sort = key == "function" || key == "symbol" || key == "sym" ? ReportSort::kFunction
                           : key == "space" || key == "dso"                      ? ReportSort::kSpace
                                                                                 : ReportSort::kSamples;
         },
         "the order of the function tables: samples (default; inclusive with --children), "
         "function (by name; perf's sym), space (the libraries, kernel and executable "
         "heaviest first, each one's functions by samples; perf's dso)")
      ->type_name("KEY")
      ->check(CLI::IsMember({"samples", "overhead", "function", "symbol", "sym", "space", "dso"}));
  sub->add_option("--format", o.format,
                  "text (default), json, folded stacks for flame graphs (e.g. `tprofctl dump "
                  "--format folded | flamegraph.pl`), svg: an interactive flame graph of those "
                  "stacks to open in a browser (hover, click to zoom, search), speedscope: JSON "
                  "for https://www.speedscope.app (a profile per process), or pprof: a gzipped "
                  "profile.proto for `pprof` and other viewers (e.g. `tprofctl dump --format "
                  "pprof -o cpu.pb.gz; pprof -top cpu.pb.gz`); --by and --top apply to text and "
                  "json only")
      ->check(CLI::IsMember({"text", "json", "folded", "svg", "speedscope", "pprof"}));
}

void AddDumpCommand(CommandLine& cli) {
  auto o = std::make_shared<DumpOptions>();
  CLI::App* sub = cli.Add(
      cli.app(), "dump",
      "Reports or exports a recorded profile. For a profile recorded by `tprofctl record` "
      "or `tprofctl start`/`stop`: per process, "
      "its samples in the kernel, its main executable and shared libraries, with idle/wait and "
      "lost samples; per function within each process, with source lines where DWARF is "
      "available.",
      [o] { return RunDump(*o); });
  sub->add_option("-i,--input", o->input, "the profile (default " + std::string(kDefaultProfilePath) + ")");
  sub->add_option("-o,--output", o->output, "write the report to FILE instead of stdout");
  sub->add_option_function<uint32_t>(
         "-p,--pid", [o](uint32_t pid) { o->report.pid = pid; },
         "one process (0: the idle/wait samples)")
      ->transform(Decimal())
      ->check(CLI::Range(0u, TPROF_PID_ALL - 1));
  AddReportOptions(sub, *o);
  AddFilterOptions(sub, &o->filter);
  sub->add_option("--symfs", o->symfs,
                  "read the sampled files and their debug files from DIR, an archive made by "
                  "`tprofctl archive`, before the paths the recording names")
      ->type_name("DIR");
}

std::string ShapeConflict(const DumpOptions& o) {
  // The whole stacks have no tables to cut or group: say so rather than
  // ignore what the user asked for.
  const bool tables = o.format == "text" || o.format == "json";
  const bool shaped = o.report.top || o.report.by != ReportBy::kAll ||
                      o.report.percent_limit || o.report.sort != ReportSort::kSamples;
  if (tables || !shaped) return "";
  return "--top, --by, --percent-limit and --sort shape the text and json tables, not --format " +
         o.format +
         " (use --pid, --comm, --tid, --cpu or --time to choose what it holds)";
}

int RunDump(const DumpOptions& o) {
  const std::string& path = o.input;
  const ReportOptions& options = o.report;
  const std::optional<std::string>& output = o.output;
  enum class Export { kNone, kPprof, kSvg, kSpeedscope };
  const Export export_format = o.format == "pprof"        ? Export::kPprof
                               : o.format == "svg"        ? Export::kSvg
                               : o.format == "speedscope" ? Export::kSpeedscope
                                                          : Export::kNone;
  const ReportFormat format = o.format == "json"     ? ReportFormat::kJson
                              : o.format == "folded" ? ReportFormat::kFolded
                                                     : ReportFormat::kText;
  if (std::string conflict = ShapeConflict(o); !conflict.empty()) {
    std::fprintf(stderr, "tprofctl dump: %s\n", conflict.c_str());
    return 2;
  }
  if (export_format == Export::kPprof && !output && ::isatty(STDOUT_FILENO)) {
    std::fprintf(stderr,
                 "tprofctl dump: a pprof profile is binary (gzip): write it to a file with "
                 "-o FILE (or redirect stdout)\n");
    return 2;
  }
  auto profile = ReadProfile(path);
  if (!profile) return ReportError(profile.error(), Doing::kReadProfile);
  if (int rc = ApplyFilter(o.filter, path, &*profile)) return rc;
  if (options.pid && *options.pid != 0 && !profile->processes.count(*options.pid)) {
    bool sampled = false;
    for (const auto& [key, count] : profile->samples) sampled |= key.pid == *options.pid;
    if (!sampled) {
      std::fprintf(stderr, "tprofctl: pid %u has no samples in %s\n", *options.pid, path.c_str());
      return 1;
    }
  }
  std::fputs(RebuiltFilesWarning(*profile, o.symfs).c_str(), stderr);
  // Throttled, perf's limit is why the rate is low, not the machine.
  if (const std::string throttled = ThrottleWarning(*profile); !throttled.empty())
    std::fputs(throttled.c_str(), stderr);
  else if (auto rate = AchievedSamplingRate(*profile))
    std::fputs(LowRateWarning(*rate).c_str(), stderr);
  SymbolizerOptions symbolizer_options;
  symbolizer_options.symfs = o.symfs;
  // A process table shows no source lines: skip DWARF's line tables (the
  // recorder's own samples in tprofctl, a large C++ binary with debug info,
  // took 50 s to resolve to lines in a TCG guest, and `record` prints this
  // table after every recording).
  if (export_format == Export::kNone && options.by == ReportBy::kProcess)
    symbolizer_options.source_lines = false;
  Symbolizer symbolizer(*profile, symbolizer_options);
  std::fputs(SampleShareWarnings(*profile, CountSampleShares(*profile, symbolizer, options)).c_str(),
             stderr);
  std::string out, hint;
  if (export_format == Export::kPprof) {
    auto bytes = EncodePprof(*profile, symbolizer, PprofOptions{options.pid});
    if (!bytes) return ReportError(bytes.error());
    out = std::move(*bytes);
  } else if (export_format == Export::kSvg) {
    FlameGraphOptions fg;
    fg.subtitle = path + (options.pid ? ", pid " + std::to_string(*options.pid) : "");
    out = RenderFlameGraph(FoldedStackRows(*profile, symbolizer, options), fg);
  } else if (export_format == Export::kSpeedscope) {
    SpeedscopeOptions ss;
    ss.name = path;
    ss.period_ns = SamplingPeriodNs(*profile);
    out = RenderSpeedscope(FoldedStackRows(*profile, symbolizer, options), ss);
  } else {
    out = RenderReport(*profile, symbolizer, options, format);
    // A person reads text: say how to name what stayed unnamed (on stderr,
    // after the report), where the report shows function rows, and only of
    // the process it shows (a --by process report, as `record` prints it,
    // would otherwise repeat the hint the next --by symbol report gives).
    const bool function_rows = options.by == ReportBy::kAll || options.by == ReportBy::kSymbol ||
                               options.by == ReportBy::kCaller;
    if (format == ReportFormat::kText && function_rows)
      hint = DebugSymbolsHint(UnresolvedObjects(*profile, symbolizer, options.pid), 5,
                              AptHasPackage);
  }
  if (output) {
    if (Status st = WriteFileAtomically(*output, out); !st) return ReportError(st.error());
    std::fputs(hint.c_str(), stderr);
    return 0;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  const int rc = std::fflush(stdout) == 0 ? 0 : 1;
  std::fputs(hint.c_str(), stderr);
  return rc;
}

}  // namespace tprof::cli
