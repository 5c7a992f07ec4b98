// tprofctl: the command-line front end of tprof.
#include <linux/tprof.h>

#include <string>

#include "commands.h"

#ifndef TPROF_VERSION
#error "TPROF_VERSION (the Makefile's VERSION) must be defined"
#endif

#define TPROF_STR2(x) #x
#define TPROF_STR(x) TPROF_STR2(x)

int main(int argc, char** argv) {
  using namespace tprof::cli;
  CommandLine cli("tprofctl " TPROF_VERSION " (tprof ABI " TPROF_STR(TPROF_ABI_MAJOR) "." TPROF_STR(
      TPROF_ABI_MINOR) ")");
  AddStatusCommand(cli);
  AddMetricsCommand(cli);
  AddThreadsCommand(cli);
  AddTopCommand(cli);
  AddRecordCommands(cli);
  AddStatCommand(cli);
  AddDumpCommand(cli);
  AddAnnotateCommand(cli);
  AddDiffCommand(cli);
  AddWindowCommand(cli);
  AddPmuCommand(cli);
  AddArchiveCommand(cli);
  return cli.Run(argc, argv);
}
