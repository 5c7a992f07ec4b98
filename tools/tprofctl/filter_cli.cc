#include "filter_cli.h"

#include <unistd.h>

#include <cstdio>
#include <utility>

#include "cli_util.h"

namespace tprof::cli {

namespace {

void SplitNames(const std::string& text, std::vector<std::string>* out) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out->push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
}

}  // namespace

std::function<void(const std::string&)> IdListParser(const char* name, std::vector<uint32_t>* out) {
  return [name, out](const std::string& text) {
    auto list = ParseIdList(text);
    if (!list) throw CLI::ValidationError(name, list.error().message());
    out->insert(out->end(), list->begin(), list->end());
  };
}

bool CpusExist(const char* command, const std::vector<uint32_t>& cpus) {
  const long n = ::sysconf(_SC_NPROCESSORS_CONF);
  for (uint32_t cpu : cpus)
    if (n > 0 && cpu >= static_cast<uint64_t>(n)) {
      std::fprintf(stderr, "tprofctl %s: no CPU %u (this machine's are 0-%ld)\n", command, cpu,
                   n - 1);
      return false;
    }
  return true;
}

void AddFilterOptions(CLI::App* sub, SampleFilter* filter) {
  const auto& ids = IdListParser;
  sub->add_option_function<std::string>("--tid", ids("--tid", &filter->tids),
                                         "only the samples of these threads")
      ->type_name("TID[,TID...]");
  sub->add_option_function<std::string>(
      "--cpu", ids("--cpu", &filter->cpus),
      "only the samples taken on these CPUs (ranges as 0-3)")
      ->type_name("CPU[,CPU...]");
  sub->add_option_function<std::string>(
      "--comm", [filter](const std::string& text) { SplitNames(text, &filter->comms); },
      "only the processes of these names (the names the reports show; the kernel names "
      "processes, not threads)")
      ->type_name("NAME[,NAME...]");
  sub->add_option_function<std::string>(
      "--time",
      [filter](const std::string& text) {
        if (Status st = ParseTimeRange(text, filter); !st)
          throw CLI::ValidationError("--time", st.error().message());
      },
      "only the samples in [START, END): seconds from the first sample (0.5,1.5; 250ms,; ,2) "
      "or @NANOSECONDS on the sampling clock; to the recording's time granularity (10 ms "
      "unless recorded with --time-granularity)")
      ->type_name("START,END");
}

int ApplyFilter(const SampleFilter& filter, const std::string& path, Profile* profile,
                NoMatch no_match) {
  if (filter.empty()) return 0;
  auto filtered = FilterProfile(*profile, filter);
  if (!filtered)
    return ReportError(Error(filtered.error().code(), path + ": " + filtered.error().message()),
                       Doing::kReadProfile);
  if (no_match == NoMatch::kRefuse && filtered->samples.empty() && !profile->samples.empty()) {
    std::fprintf(stderr, "tprofctl: no sample of %s matches %s; %s\n", path.c_str(),
                 filter.Describe().c_str(), DescribeSelectable(*profile, filter).c_str());
    return 1;
  }
  *profile = std::move(*filtered);
  return 0;
}

}  // namespace tprof::cli
