// tprofctl dump: reads a profile (tprof.data) and prints where the CPU went:
// per process (kernel / user / shared library, idle, lost) and per function;
// or exports it: folded stacks, an interactive SVG flame graph, speedscope
// JSON, or pprof.
#include "dump.h"

#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>

#include "cli_util.h"
#include "tprof/flamegraph.h"
#include "tprof/output_file.h"
#include "tprof/pprof.h"
#include "tprof/profile_file.h"
#include "tprof/report.h"
#include "tprof/speedscope.h"
#include "tprof/symbolizer.h"

namespace tprof::cli {

namespace {

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: tprofctl dump [-i FILE] [--by process|symbol|caller] [--children]\n"
               "                     [--pid PID] [--top N]\n"
               "                     [--format text|json|folded|svg|speedscope|pprof] [-o FILE]\n\n"
               "Reports a profile recorded by `tprofctl record` or `tprofctl start`/`stop`:\n"
               "per process, its samples in the kernel, its main executable and shared\n"
               "libraries, with idle/wait and lost samples; per function within each\n"
               "process, with source lines where DWARF is available.\n"
               "  -i FILE        the profile (default %s)\n"
               "  --by WHAT      only the process table or only the function tables\n"
               "                 (default: both), or caller: per process, each caller ->\n"
               "                 callee step of the recorded stacks with its samples\n"
               "  --children     function tables with inclusive samples (the samples whose\n"
               "                 stack holds the function, as perf report --children) beside\n"
               "                 the self samples, sorted by them\n"
               "  --pid PID      one process (0: the idle/wait samples)\n"
               "  --top N        N rows per table (default: all)\n"
               "  --format F     text (default), json, folded stacks for flame graphs\n"
               "                 (e.g. `tprofctl dump --format folded | flamegraph.pl`),\n"
               "                 svg: an interactive flame graph of those stacks to open in\n"
               "                 a browser (hover, click to zoom, search), speedscope: JSON\n"
               "                 for https://www.speedscope.app (a profile per process), or\n"
               "                 pprof: a gzipped profile.proto for `pprof` and other viewers\n"
               "                 (e.g. `tprofctl dump --format pprof -o cpu.pb.gz; pprof -top\n"
               "                 cpu.pb.gz`); --by and --top apply to none of the last three\n"
               "  -o, --output FILE  write the report to FILE instead of stdout\n",
               kDefaultProfilePath);
}

}  // namespace

int RunDump(const Args& args) {
  std::string path = kDefaultProfilePath;
  ReportOptions options;
  ReportFormat format = ReportFormat::kText;
  enum class Export { kNone, kPprof, kSvg, kSpeedscope } export_format = Export::kNone;
  std::optional<std::string> output;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "-h" || a == "--help") {
      Usage(stdout);
      return 0;
    } else if ((a == "-i" || a == "--input") && has_value) {
      path = args[++i];
    } else if ((a == "-o" || a == "--output") && has_value) {
      output = args[++i];
    } else if (a == "--by" && has_value) {
      const std::string& by = args[++i];
      if (by == "process") {
        options.by = ReportBy::kProcess;
      } else if (by == "symbol" || by == "function") {
        options.by = ReportBy::kSymbol;
      } else if (by == "caller") {
        options.by = ReportBy::kCaller;
      } else {
        std::fprintf(stderr, "tprofctl dump: --by takes process, symbol or caller, got '%s'\n",
                     by.c_str());
        return 2;
      }
    } else if (a == "--children") {
      options.children = true;
    } else if (a == "--pid" && has_value) {
      auto v = ParseNumber(a, args[++i]);
      if (!v || *v >= TPROF_PID_ALL) return 2;
      options.pid = static_cast<uint32_t>(*v);
    } else if (a == "--top" && has_value) {
      auto v = ParseNumber(a, args[++i]);
      if (!v) return 2;
      options.top = static_cast<size_t>(*v);
    } else if (a == "--format" && has_value) {
      const std::string& f = args[++i];
      export_format = f == "pprof"        ? Export::kPprof
                      : f == "svg"        ? Export::kSvg
                      : f == "speedscope" ? Export::kSpeedscope
                                          : Export::kNone;
      if (f == "text" || export_format != Export::kNone) {
        format = ReportFormat::kText;
      } else if (f == "json") {
        format = ReportFormat::kJson;
      } else if (f == "folded") {
        format = ReportFormat::kFolded;
      } else {
        std::fprintf(stderr,
                     "tprofctl dump: --format takes text, json, folded, svg, speedscope or pprof, "
                     "got '%s'\n",
                     f.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr, "tprofctl dump: unexpected '%s'\n\n", a.c_str());
      Usage(stderr);
      return 2;
    }
  }
  if (export_format == Export::kPprof && !output && ::isatty(STDOUT_FILENO)) {
    std::fprintf(stderr,
                 "tprofctl dump: a pprof profile is binary (gzip): write it to a file with "
                 "-o FILE (or redirect stdout)\n");
    return 2;
  }
  auto profile = ReadProfile(path);
  if (!profile) return ReportError(profile.error());
  if (options.pid && *options.pid != 0 && !profile->processes.count(*options.pid)) {
    bool sampled = false;
    for (const auto& [key, count] : profile->samples) sampled |= key.pid == *options.pid;
    if (!sampled) {
      std::fprintf(stderr, "tprofctl: pid %u has no samples in %s\n", *options.pid, path.c_str());
      return 1;
    }
  }
  Symbolizer symbolizer(*profile);
  std::string out;
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
    out = RenderSpeedscope(FoldedStackRows(*profile, symbolizer, options), ss);
  } else {
    out = RenderReport(*profile, symbolizer, options, format);
  }
  if (output) {
    if (Status st = WriteFileAtomically(*output, out); !st) return ReportError(st.error());
    return 0;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

int RunDump(int argc, char** argv) {
  return RunDump(argc > 1 ? Args(argv + 1, argv + argc) : Args());
}

}  // namespace tprof::cli
