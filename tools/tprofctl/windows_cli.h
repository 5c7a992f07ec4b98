// Counting windows in tprofctl. The sampling session belongs to the
// recorder process (`tprofctl start` / `record`), and only the session's
// descriptor may add windows, so windows are options of start/record
// (--window, --profil) that the recorder applies right after starting; at
// stop it saves them to PROFILE.windows (text, see tprof/windows.h), which
// `tprofctl window list|show` reads.
#ifndef TPROF_TOOLS_TPROFCTL_WINDOWS_CLI_H_
#define TPROF_TOOLS_TPROFCTL_WINDOWS_CLI_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "command_line.h"

#include "tprof/expected.h"
#include "tprof/windows.h"

namespace tprof::cli {

// Adds --window SPEC and --profil SPEC (repeatable) to start/record: the
// specs parsed into *out (a bad spec is a usage error).
void AddWindowOptions(CLI::App* sub, std::vector<tprof_window_add>* out);

// Adds the windows on the session's descriptor. A process or profil window
// with pid 0 means `pid0` (record: the command) if nonzero.
Status ApplyWindows(int fd, const std::vector<tprof_window_add>& windows, pid_t pid0);

// Writes the session's windows to profile_path + ".windows" (removes a
// stale one if the session has none).
Status SaveWindows(int fd, const std::string& profile_path);

}  // namespace tprof::cli

#endif  // TPROF_TOOLS_TPROFCTL_WINDOWS_CLI_H_
