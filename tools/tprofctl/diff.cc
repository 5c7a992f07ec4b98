// tprofctl diff: compares two recorded profiles, per function or per
// process: each row's share of A's and B's samples and the change.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "tprof/diff.h"
#include "tprof/profile_file.h"
#include "tprof/symbolizer.h"

namespace tprof::cli {

namespace {

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: tprofctl diff A B [--by function|process] [--pid PID] [--top N]\n"
               "                     [--format text|json]\n\n"
               "Compares two profiles recorded by `tprofctl record` or `tprofctl start`/`stop`\n"
               "(e.g. before and after a change): for each function (or process), its share\n"
               "of A's and of B's samples taken, the change in percentage points (B - A) and\n"
               "the sample counts, largest change first. Rows found in one profile only show\n"
               "0 in the other. Processes are matched by name, since pids differ between\n"
               "recordings.\n"
               "  --by WHAT      function (default) or process\n"
               "  --pid PID      only this pid in both profiles (0: the idle/wait samples)\n"
               "  --top N        the N largest changes (default: all)\n"
               "  --format F     text (default) or json\n");
}

bool HasPid(const Profile& p, uint32_t pid) {
  if (pid == 0 || p.processes.count(pid)) return true;
  for (const auto& [key, count] : p.samples)
    if (key.pid == pid) return true;
  return false;
}

}  // namespace

int RunDiff(const Args& args) {
  std::vector<std::string> paths;
  DiffOptions options;
  DiffFormat format = DiffFormat::kText;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "-h" || a == "--help") {
      Usage(stdout);
      return 0;
    } else if (a == "--by" && has_value) {
      const std::string& by = args[++i];
      if (by == "function" || by == "symbol") {
        options.by = DiffBy::kFunction;
      } else if (by == "process") {
        options.by = DiffBy::kProcess;
      } else {
        std::fprintf(stderr, "tprofctl diff: --by takes function or process, got '%s'\n",
                     by.c_str());
        return 2;
      }
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
      if (f == "text") {
        format = DiffFormat::kText;
      } else if (f == "json") {
        format = DiffFormat::kJson;
      } else {
        std::fprintf(stderr, "tprofctl diff: --format takes text or json, got '%s'\n", f.c_str());
        return 2;
      }
    } else if (a.size() > 1 && a[0] == '-') {
      std::fprintf(stderr, "tprofctl diff: unexpected '%s'\n\n", a.c_str());
      Usage(stderr);
      return 2;
    } else {
      paths.push_back(a);
    }
  }
  if (paths.size() != 2) {
    std::fprintf(stderr, "tprofctl diff: needs two profiles, A and B (got %zu)\n\n",
                 paths.size());
    Usage(stderr);
    return 2;
  }
  auto a = ReadProfile(paths[0]);
  if (!a) return ReportError(a.error());
  auto b = ReadProfile(paths[1]);
  if (!b) return ReportError(b.error());
  if (options.pid && !HasPid(*a, *options.pid) && !HasPid(*b, *options.pid)) {
    std::fprintf(stderr, "tprofctl: pid %u has no samples in %s or %s\n", *options.pid,
                 paths[0].c_str(), paths[1].c_str());
    return 1;
  }
  Symbolizer sym_a(*a);
  Symbolizer sym_b(*b);
  DiffData d = BuildDiff({*a, sym_a, paths[0]}, {*b, sym_b, paths[1]}, options);
  std::string out = RenderDiff(d, options, format);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace tprof::cli
