// tprofctl archive: packs a recording with the ELF files and debug files it
// samples, so that `tprofctl dump --symfs OUT -i OUT/tprof.data` reports it
// on another machine (tprof/archive.h has the layout).
#include <cstdio>
#include <memory>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "tprof/analysis/archive.h"
#include "tprof/analysis/profile_file.h"

namespace tprof::cli {
namespace {

struct ArchiveOptions {
  std::string input = kDefaultProfilePath;
  std::string output = "tprof-archive";
  std::string debug_dir = "/usr/lib/debug";
};

int RunArchive(const ArchiveOptions& o) {
  auto profile = ReadProfile(o.input);
  if (!profile) return ReportError(profile.error(), Doing::kReadProfile);
  auto summary = ArchiveProfile(*profile, o.output, o.debug_dir);
  if (!summary) return ReportError(summary.error());
  for (const RebuiltFile& f : summary->skipped)
    std::fprintf(stderr, "tprofctl: warning: %s not packed: %s (build id %s when recorded)\n",
                 f.path.c_str(),
                 f.current_build_id.empty() ? "gone or unreadable" : "rebuilt since the recording",
                 f.recorded_build_id.c_str());
  size_t debug = 0;
  for (const ArchivedFile& f : summary->packed) debug += f.debug_file;
  std::printf("%s: %zu files (%zu with debug files), %zu not packed; report it with "
              "`tprofctl dump --symfs %s -i %s/%s`\n",
              o.output.c_str(), summary->packed.size(), debug, summary->skipped.size(),
              o.output.c_str(), o.output.c_str(), kArchiveProfileName);
  return 0;
}

}  // namespace

void AddArchiveCommand(CommandLine& cli) {
  auto o = std::make_shared<ArchiveOptions>();
  CLI::App* sub = cli.Add(
      cli.app(), "archive",
      "Packs a recording with the binaries and debug files it sampled (by their recorded build "
      "ids) into a directory, to report it on another machine with `tprofctl dump --symfs DIR`. "
      "Files rebuilt since the recording are reported and not packed.",
      [o] { return RunArchive(*o); });
  sub->add_option("-i,--input", o->input,
                  "the profile (default " + std::string(kDefaultProfilePath) + ")");
  sub->add_option("-o,--output", o->output, "the archive directory (default tprof-archive)");
  sub->add_option("--debug-dir", o->debug_dir,
                  "where separate debug files are looked for (default /usr/lib/debug)");
}

}  // namespace tprof::cli
