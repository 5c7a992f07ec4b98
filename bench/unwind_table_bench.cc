// Unwind tables (tprof/analysis/unwind_table.h) of real binaries: rows,
// bytes, functions, rows the format cannot state, the distinct rule sets
// the rows repeat (what a compact form, {start, rule index}, would keep),
// and the time to build each. Host only: what `record --call-graph dwarf`
// builds once per mapped file, and what loading tables into the module
// would hold per file.
//
//   tprof_unwind_table_bench [FILE...]   (default: libc, libstdc++, python3, sha256sum, xz)
#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tprof/analysis/unwind_table.h"

int main(int argc, char** argv) {
  std::vector<std::string> files(argv + 1, argv + argc);
  if (files.empty())
    files = {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libstdc++.so.6",
             "/usr/bin/python3", "/usr/bin/sha256sum", "/usr/bin/xz"};
  std::printf("%-40s %8s %9s %9s %11s %9s %9s\n", "FILE", "ROWS", "KIB", "FUNCTIONS",
              "UNSUPPORTED", "RULESETS", "BUILD_MS");
  for (const std::string& f : files) {
    const auto t0 = std::chrono::steady_clock::now();
    auto t = tprof::BuildUnwindTable(f);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!t) {
      std::printf("%-40s %s\n", f.c_str(), t.error().message().c_str());
      continue;
    }
    std::set<std::tuple<int, int, int, int, int, int>> rules;
    for (const tprof_unwind_row& r : t->rows)
      rules.insert({r.cfa_base, r.cfa_offset, r.fp_rule, r.fp_offset, r.ra_rule, r.ra_offset});
    std::printf("%-40s %8zu %9zu %9llu %11llu %9zu %9.1f\n", f.c_str(), t->rows.size(),
                t->rows.size() * sizeof(tprof_unwind_row) / 1024,
                static_cast<unsigned long long>(t->functions),
                static_cast<unsigned long long>(t->unsupported), rules.size(), ms);
  }
  return 0;
}
