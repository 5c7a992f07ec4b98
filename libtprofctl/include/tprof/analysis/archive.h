// Packing a recording with the ELF files it needs, so that it can be
// reported on another machine (perf archive + --symfs).
//
// Layout of an archive directory OUT:
//   OUT/tprof.data                the recording
//   OUT/.build-id/xx/yyyy         each file of Profile::build_ids, by its
//                                 recorded build id (xx: the first two hex
//                                 digits, yyyy: the rest)
//   OUT/.build-id/xx/yyyy.debug   its separate debug file, when one is found
//   OUT/manifest                  "<build id> <path>" per packed file
// Reports read it back with a symfs directory (SymbolizerOptions::symfs):
// a mapping's file with a recorded build id is read from the archive, and
// the archive is searched for debug files before debug_dir.
#ifndef TPROF_ARCHIVE_H_
#define TPROF_ARCHIVE_H_

#include <string>
#include <vector>

#include "tprof/analysis/elf_snapshot.h"
#include "tprof/base/expected.h"
#include "tprof/analysis/profile.h"

namespace tprof {

inline constexpr char kArchiveProfileName[] = "tprof.data";

struct ArchivedFile {
  std::string path;      // as the profile names it
  std::string build_id;  // recorded (= on disk when packed)
  bool debug_file = false;  // a separate debug file was packed too
};

struct ArchiveSummary {
  std::vector<ArchivedFile> packed;
  // Not packed: rebuilt or removed since the recording (current_build_id
  // differs; "" when unreadable).
  std::vector<RebuiltFile> skipped;
};

// The file of build id in a symfs/archive directory:
// <symfs>/.build-id/<id[0:2]>/<id[2:]> (+ ".debug" for its debug file).
[[nodiscard]] std::string SymfsPath(const std::string& symfs, const std::string& build_id,
                                    bool debug = false);

// Writes the archive (see above) into out_dir, created if missing. Separate
// debug files are looked for by build id under debug_dir/.build-id and by
// .gnu_debuglink (next to the file, in its .debug/, under debug_dir).
Expected<ArchiveSummary> ArchiveProfile(const Profile& profile, const std::string& out_dir,
                                        const std::string& debug_dir = "/usr/lib/debug");

}  // namespace tprof

#endif  // TPROF_ARCHIVE_H_
