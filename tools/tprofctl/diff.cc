// tprofctl diff: compares two recorded profiles, per function or per
// process: each row's share of A's and B's samples and the change.
#include <array>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "filter_cli.h"
#include "tprof/analysis/diff.h"
#include "tprof/analysis/profile_file.h"
#include "tprof/analysis/symbolizer.h"

namespace tprof::cli {

namespace {

struct DiffCliOptions {
  std::array<std::string, 2> paths;  // A and B
  DiffOptions diff;
  std::string format = "text";
  SampleFilter filter;  // applied to both
  // `tprofctl archive` directories: one for both profiles, or A's and B's.
  std::vector<std::string> symfs;
};

bool HasPid(const Profile& p, uint32_t pid) {
  if (pid == 0 || p.processes.count(pid)) return true;
  for (const auto& [key, count] : p.samples)
    if (key.pid == pid) return true;
  return false;
}

int RunDiff(const DiffCliOptions& o) {
  const std::array<std::string, 2>& paths = o.paths;
  const DiffOptions& options = o.diff;
  const DiffFormat format = o.format == "json" ? DiffFormat::kJson : DiffFormat::kText;
  if (o.symfs.size() > 2) {
    std::fprintf(stderr, "tprofctl diff: --symfs at most twice (A's archive, then B's)\n");
    return 2;
  }
  auto a = ReadProfile(paths[0]);
  if (!a) return ReportError(a.error(), Doing::kReadProfile);
  auto b = ReadProfile(paths[1]);
  if (!b) return ReportError(b.error(), Doing::kReadProfile);
  // One side without a match is a diff (everything appeared or went).
  if (int rc = ApplyFilter(o.filter, paths[0], &*a, NoMatch::kAllow)) return rc;
  if (int rc = ApplyFilter(o.filter, paths[1], &*b, NoMatch::kAllow)) return rc;
  if (!o.filter.empty() && a->samples.empty() && b->samples.empty()) {
    std::fprintf(stderr, "tprofctl: no sample of %s or %s matches %s\n", paths[0].c_str(),
                 paths[1].c_str(), o.filter.Describe().c_str());
    return 1;
  }
  if (options.pid && !HasPid(*a, *options.pid) && !HasPid(*b, *options.pid)) {
    std::fprintf(stderr, "tprofctl: pid %u has no samples in %s or %s\n", *options.pid,
                 paths[0].c_str(), paths[1].c_str());
    return 1;
  }
  SymbolizerOptions options_a, options_b;
  if (!o.symfs.empty()) options_a.symfs = options_b.symfs = o.symfs.front();
  if (o.symfs.size() == 2) options_b.symfs = o.symfs.back();
  Symbolizer sym_a(*a, options_a);
  Symbolizer sym_b(*b, options_b);
  DiffData d = BuildDiff({*a, sym_a, paths[0]}, {*b, sym_b, paths[1]}, options);
  std::string out = RenderDiff(d, options, format);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace

void AddDiffCommand(CommandLine& cli) {
  auto o = std::make_shared<DiffCliOptions>();
  CLI::App* sub = cli.Add(
      cli.app(), "diff",
      "Compares two profiles per function or process. Given two recorded by `tprofctl "
      "record` or `tprofctl start`/`stop` (before and after a change, say): for each function (or process), its share of A's and of B's "
      "samples taken, the change in percentage points (B - A) and the sample counts, largest "
      "change first. Rows found in one profile only show 0 in the other. Processes are matched "
      "by name, since pids differ between recordings.",
      [o] { return RunDiff(*o); });
  sub->add_option("A", o->paths[0], "the profile before (the baseline)")->required();
  sub->add_option("B", o->paths[1], "the profile after")->required();
  sub->add_option_function<std::string>(
         "--by",
         [o](const std::string& by) {
           o->diff.by = by == "process" ? DiffBy::kProcess : DiffBy::kFunction;
         },
         "function (default) or process")
      ->check(CLI::IsMember({"function", "symbol", "process"}));
  sub->add_option_function<uint32_t>(
         "-p,--pid", [o](uint32_t pid) { o->diff.pid = pid; },
         "only this pid in both profiles (0: the idle/wait samples)")
      ->transform(Decimal())
      ->check(CLI::Range(0u, TPROF_PID_ALL - 1));
  sub->add_option_function<size_t>(
         "--top", [o](size_t top) { o->diff.top = top; }, "the N largest changes (default: all)")
      ->transform(Decimal());
  sub->add_option("--format", o->format, "text (default) or json")
      ->check(CLI::IsMember({"text", "json"}));
  AddFilterOptions(sub, &o->filter);
  // allow_extra_args(false): each --symfs takes one DIR, wherever A and B stand.
  sub->add_option("--symfs", o->symfs,
                  "read the sampled files and their debug files from DIR, an archive made by "
                  "`tprofctl archive`, before the paths the recordings name; given twice, the "
                  "first is A's archive and the second B's")
      ->type_name("DIR")
      ->type_size(1)
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
}

}  // namespace tprof::cli
