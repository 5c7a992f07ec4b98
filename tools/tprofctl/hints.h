// What tprofctl tells a user to do about a library error. The library's
// errors are neutral (errno + what failed); the instructions, with real
// paths and tprofctl's own commands, are added here.
#ifndef TPROF_TOOLS_TPROFCTL_HINTS_H_
#define TPROF_TOOLS_TPROFCTL_HINTS_H_

#include <functional>
#include <string>
#include <vector>

#include "tprof/base/expected.h"
#include "tprof/analysis/profile.h"
#include "tprof/analysis/unresolved.h"

namespace tprof::cli {

// What tprofctl was doing when the error came: the same errno means
// different things for different requests.
enum class Doing {
  kOther,
  kOpenDevice,   // /dev/tprof for status, metrics, threads, ...
  kSampling,     // starting a sampling session (start, record)
  kAllCpus,      // ... of every process (start, record -a)
  kMetrics,      // metrics on/off/status
  kThreads,      // draining per-thread metrics
  kReadProfile,  // dump, diff, window
  kPmuSpec,      // parsing --counter/--when
  kPmuProgram,   // creating a PMU program of one process or thread
  kPmuAllCpus,   // ... on every CPU (pmu watch -a)
};

// Where the module for the running kernel is: this tprofctl's build tree's
// build/kmod/RELEASE/kmod/tprof.ko when tprofctl runs from there and it
// exists, else that path relative to the source tree.
[[nodiscard]] std::string ModuleFileHint();

// One line saying what to do, or "" when there is nothing useful to add.
[[nodiscard]] std::string Hint(const Error& error, Doing doing);

// Lines (each ending in '\n') saying how to get names for the addresses
// of the files that have unnamed samples, the `limit` files with the most
// samples: the Debian debug package of a packaged file (<package>-dbgsym,
// or <package>-dbg where has_package says the archive has one), debuginfod,
// or building with -g / keeping the debug file. "" for no files.
[[nodiscard]] std::string DebugSymbolsHint(
    const std::vector<UnresolvedObject>& objects, size_t limit,
    const std::function<bool(const std::string&)>& has_package);

// Whether apt knows a package of that name (`apt-cache show`).
[[nodiscard]] bool AptHasPackage(const std::string& name);

// The warnings (lines ending in '\n') dump and annotate print about the
// profile's files rebuilt or removed since the recording (RebuiltFiles()):
// their symbols may be wrong. A file the archive `symfs` ("" for none)
// holds in its recorded build is read from there and not warned about.
// only: that file alone (annotate's), "" for every file.
[[nodiscard]] std::string RebuiltFilesWarning(const Profile& profile, const std::string& symfs,
                                              const std::string& only = "");

}  // namespace tprof::cli

#endif  // TPROF_TOOLS_TPROFCTL_HINTS_H_
