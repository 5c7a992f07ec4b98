// Which files hold sampled code the symbolizer could not name, and which
// Debian package each file came from: the facts a user needs to install
// its debug symbols. Neutral: tprofctl words the advice.
#ifndef TPROF_UNRESOLVED_H_
#define TPROF_UNRESOLVED_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tprof/analysis/profile.h"
#include "tprof/analysis/symbolizer.h"

namespace tprof {

struct UnresolvedObject {
  std::string path;     // the mapped file
  uint64_t samples = 0;  // samples (their leaf) at its addresses without a function name
  std::string package;  // the dpkg package that installed it, "" if none
};

// The files with unnamed sampled user addresses, most samples first, each
// with its package (DpkgPackages()).
[[nodiscard]] std::vector<UnresolvedObject> UnresolvedObjects(const Profile& profile,
                                                              Symbolizer& symbolizer,
                                                              const std::string& dpkg_info_dir =
                                                                  "/var/lib/dpkg/info");
// The same of pid's samples only (all of them for nullopt).
[[nodiscard]] std::vector<UnresolvedObject> UnresolvedObjects(
    const Profile& profile, Symbolizer& symbolizer, std::optional<uint32_t> pid,
    const std::string& dpkg_info_dir = "/var/lib/dpkg/info");

// The package of each path per dpkg's file lists (<info_dir>/<package>[:arch].list),
// without the architecture qualifier; "" for a path no list has. A path
// also matches as its merged-/usr twin ("/usr/lib/x.so" and "/lib/x.so"),
// since the kernel names the file by its real path and dpkg by the one the
// package shipped.
[[nodiscard]] std::vector<std::string> DpkgPackages(const std::vector<std::string>& paths,
                                                    const std::string& info_dir);

}  // namespace tprof

#endif  // TPROF_UNRESOLVED_H_
