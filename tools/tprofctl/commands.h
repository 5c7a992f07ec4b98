// tprofctl subcommands. Each command file registers its subcommand, its
// options and its action on the command line (command_line.h); the action
// returns the process exit status: 0 success, 1 failure, 2 usage error.
#ifndef TPROF_TOOLS_TPROFCTL_COMMANDS_H_
#define TPROF_TOOLS_TPROFCTL_COMMANDS_H_

#include "command_line.h"

namespace tprof::cli {

void AddStatusCommand(CommandLine& cli);
void AddMetricsCommand(CommandLine& cli);
void AddThreadsCommand(CommandLine& cli);
void AddRecordCommands(CommandLine& cli);  // record.cc: start, stop, record
void AddDumpCommand(CommandLine& cli);     // dump.cc
void AddAnnotateCommand(CommandLine& cli);  // annotate.cc
void AddDiffCommand(CommandLine& cli);     // diff.cc
void AddWindowCommand(CommandLine& cli);   // windows.cc
void AddPmuCommand(CommandLine& cli);      // pmu.cc
void AddTopCommand(CommandLine& cli);      // top.cc
void AddArchiveCommand(CommandLine& cli);  // archive.cc
void AddStatCommand(CommandLine& cli);     // stat.cc

}  // namespace tprof::cli

#endif  // TPROF_TOOLS_TPROFCTL_COMMANDS_H_
