// What the integration tests read from `tprofctl dump --format json` and
// from the bundled workloads' last line, shared by the profiler's tests.
#ifndef TPROF_TESTS_INTEGRATION_PROFILE_JSON_H_
#define TPROF_TESTS_INTEGRATION_PROFILE_JSON_H_

#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../common/json.h"
#include "guest_env.h"
#include "tprof/output/json_format.h"

namespace tprof::test {

inline uint64_t N(const Json& v) { return static_cast<uint64_t>(v.get<double>()); }

// The accounting every profile must satisfy.
inline void CheckAccounting(const Json& j) {
  uint64_t delivered = 0, taken = 0, lost = 0;
  ASSERT_FALSE(j.at("cpus").empty());
  for (const Json& c : j.at("cpus")) {
    ASSERT_TRUE(c.contains("samples_taken")) << "no control-area totals for cpu " << N(c.at("cpu"));
    EXPECT_EQ(N(c.at("samples")) + N(c.at("lost_samples")), N(c.at("samples_taken")))
        << "cpu " << N(c.at("cpu")) << ": delivered + lost != taken";
    delivered += N(c.at("samples"));
    taken += N(c.at("samples_taken"));
    lost += N(c.at("lost_samples"));
  }
  EXPECT_EQ(delivered, N(j.at("samples")));
  EXPECT_EQ(N(j.at("records").at("samples")), N(j.at("samples")));
  EXPECT_EQ(lost, N(j.at("lost_samples")));
  EXPECT_EQ(N(j.at("lost").at("samples")), lost);
  EXPECT_EQ(taken, N(j.at("samples_taken")));
  EXPECT_EQ(N(j.at("records").at("malformed")), 0u);
  uint64_t rows = N(j.at("idle").at("samples"));
  for (const Json& p : j.at("processes")) rows += N(p.at("samples"));
  EXPECT_EQ(rows, N(j.at("samples"))) << "process rows + idle != samples delivered";
}

// `tprofctl dump --format json` of a profile, checked by CheckAccounting().
inline std::optional<Json> DumpJson(const std::string& path, const std::string& extra = "") {
  std::string out;
  int rc = RunCommand("tprofctl dump -i " + path + " --format json " + extra, &out);
  EXPECT_EQ(rc, 0) << out;
  std::string error;
  auto doc = ParseJson(out, &error);
  EXPECT_TRUE(doc) << error << "\n" << out.substr(0, 2000);
  if (!doc) return std::nullopt;
  for (const char* key : {"format_version", "samples_taken", "samples", "lost_samples", "idle",
                          "lost", "cpus", "records", "processes", "functions"})
    if (!doc->contains(key)) {
      ADD_FAILURE() << "no '" << key << "' in the JSON report of " << path;
      return std::nullopt;
    }
  EXPECT_EQ(doc->at("format_version").get<int>(), tprof::kJsonFormatVersion);
  CheckAccounting(*doc);
  return doc;
}

// The function tables of every process named `name`.
inline std::vector<const Json*> FunctionTables(const Json& j, const std::string& name) {
  std::vector<const Json*> out;
  for (const Json& pf : j.at("functions"))
    if (pf.at("name").get<std::string>() == name) out.push_back(&pf);
  return out;
}

inline const Json* ProcessRow(const Json& j, const std::string& name) {
  for (const Json& p : j.at("processes"))
    if (p.at("name").get<std::string>() == name) return &p;
  return nullptr;
}

// Samples of the rows of one function table named `function`.
inline uint64_t FunctionSamples(const Json& pf, const std::string& function) {
  uint64_t n = 0;
  for (const Json& f : pf.at("functions"))
    if (f.at("function").get<std::string>() == function) n += N(f.at("samples"));
  return n;
}

inline const Json* FunctionRow(const Json& pf, const std::string& function) {
  for (const Json& f : pf.at("functions"))
    if (f.at("function").get<std::string>() == function) return &f;
  return nullptr;
}

// What a workload says it did: "NAME=NS ns (P%)" per part and "total=NS ns".
struct WorkloadLine {
  std::map<std::string, double> percent;
  uint64_t total_ns = 0;
  // The kernel's own user/system split of the run (getrusage; tprof-wl-split
  // prints it), or -1.
  double rusage_sys_pct = -1;
};
inline std::optional<WorkloadLine> ParseWorkloadLine(const std::string& out) {
  WorkloadLine w;
  static const std::regex part(R"((\w+)=(\d+) ns \(([0-9.]+)%\))");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), part); it != std::sregex_iterator();
       ++it)
    w.percent[(*it)[1]] = std::stod((*it)[3]);
  std::smatch m;
  static const std::regex total(R"(total=(\d+) ns)");
  if (w.percent.empty() || !std::regex_search(out, m, total)) return std::nullopt;
  w.total_ns = std::stoull(m[1]);
  static const std::regex rusage(R"(rusage user=(\d+) ms sys=(\d+) ms)");
  if (std::regex_search(out, m, rusage)) {
    const double user = std::stod(m[1]), sys = std::stod(m[2]);
    if (user + sys > 0) w.rusage_sys_pct = 100 * sys / (user + sys);
  }
  return w;
}

}  // namespace tprof::test

#endif  // TPROF_TESTS_INTEGRATION_PROFILE_JSON_H_
