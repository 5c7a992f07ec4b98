#include "tprof/output/pprof_series.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <utility>

#include "tprof/base/output_file.h"
#include "tprof/output/pprof.h"

namespace tprof {
namespace {

namespace fs = std::filesystem;

constexpr char kSuffix[] = ".pb.gz";

// A host name as a file name's part: what is not [A-Za-z0-9.-] becomes '_'.
std::string FileNamePart(const std::string& s) {
  std::string out = s.empty() ? "unknown" : s;
  for (char& c : out)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '-'))
      c = '_';
  return out;
}

}  // namespace

PprofSeries::PprofSeries(PprofSeriesOptions options) : options_(std::move(options)) {}

std::string PprofSeries::NameAt(int64_t end_ns) const {
  const time_t sec = static_cast<time_t>(end_ns / 1'000'000'000);
  struct tm utc {};
  gmtime_r(&sec, &utc);
  char stamp[64];
  std::snprintf(stamp, sizeof(stamp), "%04d%02d%02dT%02d%02d%02d.%09lldZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<long long>(end_ns % 1'000'000'000));
  return "tprof-" + FileNamePart(options_.host) + "-" + stamp + kSuffix;
}

std::vector<std::string> PprofSeries::Files() const {
  const std::string prefix = "tprof-" + FileNamePart(options_.host) + "-";
  std::vector<std::string> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(options_.dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > prefix.size() + sizeof(kSuffix) - 1 && name.rfind(prefix, 0) == 0 &&
        name.compare(name.size() - (sizeof(kSuffix) - 1), std::string::npos, kSuffix) == 0 &&
        e.is_regular_file(ec))
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());  // the names sort in time
  return out;
}

Expected<std::string> PprofSeries::Write(const Profile& interval, Symbolizer& symbolizer,
                                         int64_t end_ns, int64_t duration_ns) {
  PprofOptions o;
  if (!options_.host.empty()) o.labels["host"] = options_.host;
  o.time_nanos = end_ns - duration_ns;
  o.duration_nanos = duration_ns;
  auto bytes = EncodePprof(interval, symbolizer, o);
  if (!bytes) return bytes.error();
  const std::string path = options_.dir + "/" + NameAt(end_ns);
  if (Status st = WriteFileAtomically(path, *bytes); !st) return st.error();
  if (options_.keep) {
    std::vector<std::string> files = Files();
    std::error_code ec;
    for (size_t i = 0; i + options_.keep < files.size(); ++i) fs::remove(files[i], ec);
  }
  return path;
}

}  // namespace tprof
