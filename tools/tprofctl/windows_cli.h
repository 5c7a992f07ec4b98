// Counting windows in tprofctl. The sampling session belongs to the
// recorder process (`tprofctl start` / `record`), and only the session's
// descriptor may add windows, so windows are options of start/record
// (--window, --profil) that the recorder adds right after starting
// (tprof::AddWindows); at stop the library keeps them in the profile,
// which `tprofctl window list|show` reads.
#ifndef TPROF_TOOLS_TPROFCTL_WINDOWS_CLI_H_
#define TPROF_TOOLS_TPROFCTL_WINDOWS_CLI_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "command_line.h"

#include "tprof/base/expected.h"
#include "tprof/device/windows.h"

namespace tprof::cli {

// Adds --window SPEC and --profil SPEC (repeatable) to start/record: the
// specs parsed into *out (a bad spec is a usage error).
void AddWindowOptions(CLI::App* sub, std::vector<tprof_window_add>* out);

}  // namespace tprof::cli

#endif  // TPROF_TOOLS_TPROFCTL_WINDOWS_CLI_H_
