// The sample filters every report of a recording takes (dump, diff, ...):
// --tid, --cpu, --comm, --time, parsed once here (tprof/sample_filter.h).
#ifndef TPROF_TOOLS_TPROFCTL_FILTER_CLI_H_
#define TPROF_TOOLS_TPROFCTL_FILTER_CLI_H_

#include <string>

#include "command_line.h"
#include "tprof/profile.h"
#include "tprof/sample_filter.h"

namespace tprof::cli {

// Registers the four options on `sub`; they fill *filter.
void AddFilterOptions(CLI::App* sub, SampleFilter* filter);

// FilterProfile on a profile read from `path`, reporting a failure (the
// status to exit with then, else 0).
[[nodiscard]] int ApplyFilter(const SampleFilter& filter, const std::string& path, Profile* profile);

}  // namespace tprof::cli

#endif  // TPROF_TOOLS_TPROFCTL_FILTER_CLI_H_
