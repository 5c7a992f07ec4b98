// tprofctl subcommands. Each takes the arguments after its name and returns
// the process exit status: 0 success, 1 failure, 2 usage error.
#ifndef TPROF_TOOLS_TPROFCTL_COMMANDS_H_
#define TPROF_TOOLS_TPROFCTL_COMMANDS_H_

#include <string>
#include <vector>

namespace tprof::cli {

using Args = std::vector<std::string>;

int RunStatus(const Args& args);
int RunMetrics(const Args& args);
int RunThreads(const Args& args);
int RunStart(const Args& args);   // record.cc
int RunStop(const Args& args);    // record.cc
int RunRecord(const Args& args);  // record.cc
int RunDump(const Args& args);    // dump.cc
int RunDiff(const Args& args);    // diff.cc
int RunWindow(const Args& args);  // windows.cc
int RunPmu(const Args& args);     // pmu.cc
int RunTop(const Args& args);     // top.cc

}  // namespace tprof::cli

#endif  // TPROF_TOOLS_TPROFCTL_COMMANDS_H_
