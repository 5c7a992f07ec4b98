// The sample filters every report of a recording takes (dump, diff, ...):
// --tid, --cpu, --comm, --time, parsed once here (tprof/sample_filter.h).
#ifndef TPROF_TOOLS_TPROFCTL_FILTER_CLI_H_
#define TPROF_TOOLS_TPROFCTL_FILTER_CLI_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "command_line.h"
#include "tprof/analysis/profile.h"
#include "tprof/analysis/sample_filter.h"

namespace tprof::cli {

// The callback of an option that takes ids ("3", "0-3,7": ParseIdList),
// appending them to *out; a malformed list is `name`'s usage error.
std::function<void(const std::string&)> IdListParser(const char* name, std::vector<uint32_t>* out);

// Whether every CPU of -C is one of this machine's (as perf refuses
// others); if not, says so for `command` on stderr.
[[nodiscard]] bool CpusExist(const char* command, const std::vector<uint32_t>& cpus);

// Registers the four options on `sub`; they fill *filter.
void AddFilterOptions(CLI::App* sub, SampleFilter* filter);

enum class NoMatch { kRefuse, kAllow };

// FilterProfile on a profile read from `path`, reporting a failure (the
// status to exit with then, else 0). With kRefuse, a filter that selects
// no sample of a profile that has some fails too (status 1) and says what
// the profile holds: an empty report would read as a result.
[[nodiscard]] int ApplyFilter(const SampleFilter& filter, const std::string& path, Profile* profile,
                              NoMatch no_match = NoMatch::kRefuse);

}  // namespace tprof::cli

#endif  // TPROF_TOOLS_TPROFCTL_FILTER_CLI_H_
