// tprofctl dump: reports of a recorded profile (tprof.data).
#ifndef TPROF_TOOLS_TPROFCTL_DUMP_H_
#define TPROF_TOOLS_TPROFCTL_DUMP_H_

#include "commands.h"

namespace tprof::cli {

int RunDump(const Args& args);
// The same, main()-style: argv[0] is the command name ("dump"), skipped.
int RunDump(int argc, char** argv);

}  // namespace tprof::cli

#endif  // TPROF_TOOLS_TPROFCTL_DUMP_H_
