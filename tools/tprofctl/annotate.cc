// tprofctl annotate: one function of a recorded profile, its source lines
// and its instructions with their samples (the library's annotate.h).
#include <cerrno>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "hints.h"
#include "tprof/analysis/annotate.h"
#include "tprof/base/output_file.h"
#include "tprof/analysis/profile_file.h"
#include "tprof/analysis/symbolizer.h"

namespace tprof::cli {

namespace {

struct AnnotateCliOptions {
  std::string input = kDefaultProfilePath;
  std::optional<std::string> output;
  std::string symbol;
  AnnotateOptions annotate;
  AnnotateRenderOptions render;
  std::string format = "text";
  std::string symfs;  // a `tprofctl archive` directory
};

int RunAnnotate(const AnnotateCliOptions& o) {
  auto profile = ReadProfile(o.input);
  if (!profile) return ReportError(profile.error(), Doing::kReadProfile);
  SymbolizerOptions symbolizer_options;
  symbolizer_options.debug_dir = o.annotate.debug_dir;
  symbolizer_options.symfs = o.symfs;
  Symbolizer symbolizer(*profile, symbolizer_options);
  auto annotation = Annotate(*profile, symbolizer, o.symbol, o.annotate);
  // As dump warns: about the annotated file, or about every file when the
  // function was not found (a rebuilt file's names may be why).
  std::fputs(
      RebuiltFilesWarning(*profile, o.symfs, annotation ? annotation->object : "").c_str(),
      stderr);
  if (!annotation) {
    std::fprintf(stderr, "tprofctl: %s in %s\n", annotation.error().message().c_str(),
                 o.input.c_str());
    if (annotation.error().code().value() == ENOENT)
      std::fprintf(stderr, "tprofctl: `tprofctl dump -i %s --by symbol` lists the functions "
                           "with samples\n", o.input.c_str());
    return 1;
  }
  const std::string out = RenderAnnotation(
      *annotation, o.render, o.format == "json" ? AnnotateFormat::kJson : AnnotateFormat::kText);
  if (o.output) {
    if (Status st = WriteFileAtomically(*o.output, out); !st) return ReportError(st.error());
    return 0;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace

void AddAnnotateCommand(CommandLine& cli) {
  auto o = std::make_shared<AnnotateCliOptions>();
  CLI::App* sub = cli.Add(
      cli.app(), "annotate",
      "Shows one function's source lines and instructions with their samples. Reads a "
      "profile recorded by `tprofctl record` or `tprofctl start`/`stop` and finds SYMBOL (a "
      "demangled or raw name, or a C++ name without its parameters): user code in executables "
      "and shared libraries (source lines from DWARF, the source read from disk when it is "
      "there), JIT code named by a perf map (sampled addresses only: its bytes are not in any "
      "file), and kernel code (instructions from a vmlinux with debug info in /usr/lib/debug, "
      "which also gives source lines, or from /proc/kcore as root while the recorded kernel "
      "still runs). When several processes or objects have the function, the one with the most "
      "samples is shown and the others listed; --pid chooses. Percentages are of the "
      "function's samples; the hottest instruction is marked '>', those with at least 10% '*'.",
      [o] { return RunAnnotate(*o); });
  sub->add_option("SYMBOL", o->symbol, "the function")->required();
  sub->add_option("-i,--input", o->input,
                  "the profile (default " + std::string(kDefaultProfilePath) + ")");
  sub->add_option("-o,--output", o->output, "write to FILE instead of stdout");
  sub->add_option_function<uint32_t>(
         "-p,--pid", [o](uint32_t pid) { o->annotate.pid = pid; },
         "only this process's samples")
      ->transform(Decimal())
      ->check(CLI::Range(0u, TPROF_PID_ALL - 1));
  sub->add_option("--context", o->annotate.context_lines,
                  "source lines shown before and after the function's (default 3)")
      ->transform(Decimal());
  sub->add_flag_function(
      "--no-source", [o](int64_t) { o->render.source = false; }, "leave out the source section");
  sub->add_flag_function(
      "--no-asm", [o](int64_t) { o->render.disassembly = false; },
      "leave out the disassembly");
  sub->add_option_function<std::string>(
         "--sort",
         [o](const std::string& by) { o->render.sort_by_samples = by == "samples"; },
         "instructions by address (default, with the source lines interleaved) or by samples "
         "(the sampled ones, hottest first)")
      ->check(CLI::IsMember({"address", "samples"}));
  sub->add_option("--debug-dir", o->annotate.debug_dir,
                  "where debug files are looked for: DIR/boot/vmlinux-RELEASE, "
                  "DIR/lib/modules/RELEASE/vmlinux, DIR/.build-id (default /usr/lib/debug)");
  sub->add_option("--source-dir", o->annotate.source_dirs,
                  "where to look for a source file, by its name, when it is not at the path the "
                  "debug info gives (sources moved since the build); repeatable");
  sub->add_option("--symfs", o->symfs,
                  "read the sampled files and their debug files from DIR, an archive made by "
                  "`tprofctl archive`, before the paths the recording names")
      ->type_name("DIR");
  sub->add_option("--format", o->format, "text (default) or json")
      ->check(CLI::IsMember({"text", "json"}));
}

}  // namespace tprof::cli
