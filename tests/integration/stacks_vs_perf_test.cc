// tprof's default call graph (`record -g`: CFI tables walked in the
// module) against perf's answer for code without frame pointers, `perf
// record --call-graph dwarf` (8 KiB of stack a sample, unwound by perf
// afterwards), in the same boot on the same workload: for each leaf, the
// same callers. The workload, tests/workloads/frameless.c
// built without frame pointers, reaches its leaf fl_d along two paths, one
// of them through Debian's libc (qsort). perf is Debian's, added to the
// guest by make check (tests/check.sh); without it the test fails.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../common/temp_dir.h"
#include "folded_stacks.h"
#include "guest_env.h"

namespace tprof::test {
namespace {

// Debian's perf program: /work/perf or /work/perf_<version> (tools/tprof-vm
// --add puts it in the guest's working directory) or perf on PATH; "" if
// none.
std::string PerfProgram() {
  Result found = Sh("ls /work/perf /work/perf_[0-9]* 2>/dev/null; command -v perf");
  std::istringstream lines(found.out);
  std::string p;
  struct stat st;
  while (std::getline(lines, p))
    if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & S_IXUSR)) return p;
  return "";
}

// The workload's own frames of a user path, root first ("main;fl_a"):
// what both tools name alike (libc's internal frames are named from
// different sources, and perf lists inlined ones too).
bool IsProgramFrame(const std::string& f) { return f == "main" || f.rfind("fl_", 0) == 0; }

std::string ProgramPath(const std::vector<std::string>& root_first) {
  std::string s;
  for (const std::string& f : root_first)
    if (IsProgramFrame(f)) s += (s.empty() ? "" : ";") + f;
  return s;
}

// leaf -> program path -> samples.
using Callers = std::map<std::string, std::map<std::string, uint64_t>>;

Callers FromFolded(const std::string& folded) {
  Callers out;
  for (const Stack& st : ParseFolded(folded, "")) {
    std::vector<std::string> user;
    for (const std::string& f : st.frames)
      if (!IsKernelFrame(f)) user.push_back(f);
    if (user.empty() || !IsProgramFrame(user.back())) continue;
    out[user.back()][ProgramPath(user)] += st.samples;
  }
  return out;
}

// `perf script -F comm,ip,sym,dso` prints a sample's comm on a line of its
// own, then one line a frame, leaf first ("\t  addr sym (dso)"), then a
// blank line. Kernel frames are left out: as tprof's user leaf, a
// sample's leaf is its innermost user frame.
Callers FromPerfScript(const std::string& script) {
  Callers out;
  std::istringstream in(script);
  std::vector<std::string> leaf_first;
  auto flush = [&] {
    if (!leaf_first.empty() && IsProgramFrame(leaf_first.front())) {
      const std::vector<std::string> root_first(leaf_first.rbegin(), leaf_first.rend());
      out[leaf_first.front()][ProgramPath(root_first)]++;
    }
    leaf_first.clear();
  };
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || (line[0] != ' ' && line[0] != '\t')) {
      flush();
      continue;
    }
    if (line.find("([kernel.kallsyms])") != std::string::npos) continue;
    std::istringstream frame(line);
    std::string addr, sym;
    frame >> addr >> sym;
    leaf_first.push_back(sym);
  }
  flush();
  return out;
}

uint64_t Sum(const std::map<std::string, uint64_t>& m) {
  uint64_t n = 0;
  for (const auto& [path, samples] : m) n += samples;
  return n;
}

std::string Show(const std::map<std::string, uint64_t>& m) {
  std::string s;
  for (const auto& [path, samples] : m) s += "  " + path + " " + std::to_string(samples) + "\n";
  return s;
}

TEST(StacksVsPerf, CfiCallGraphFindsTheCallersPerfDwarfFinds) {
  const std::string perf = PerfProgram();
  ASSERT_FALSE(perf.empty()) << "no perf program in the guest (tests/check.sh adds Debian's)";
  TempDir dir;
  // fl_d along main;fl_a;fl_b;fl_c (fl_b frameless, not a leaf) and along
  // main;fl_sort;(libc's qsort);fl_cmp, about half the time each.
  const std::string workload =
      "sh -c 'tprof-wl-frameless --ms 800 >/dev/null && tprof-wl-frameless --qsort --ms 800 >/dev/null'";
  Result rec = Sh("cd " + dir.path() + " && tprofctl record -q -g -F 1000 -o t.data -- " + workload);
  ASSERT_EQ(rec.rc, 0) << rec.out;
  Result folded = Sh("tprofctl dump -i " + dir.File("t.data") + " --format folded");
  ASSERT_EQ(folded.rc, 0) << folded.out;
  // perf's default event: cycles where the guest has a PMU (arm64's
  // emulated one), else cpu-clock (x86 under TCG). sid's arm64 kernel
  // refuses --call-graph dwarf on cpu-clock (EOPNOTSUPP).
  Result prec = Sh("cd " + dir.path() + " && " + perf +
                   " record -q -F 1000 --call-graph dwarf -o p.data -- " + workload);
  ASSERT_EQ(prec.rc, 0) << prec.out;
  // --no-inline: perf would ask addr2line (not in the guest) for inlined
  // frames, and the program has none (-fno-inline).
  Result script = Sh(perf + " script -i " + dir.File("p.data") +
                     " --no-inline -F comm,ip,sym,dso 2>" + dir.File("script.err"));
  ASSERT_EQ(script.rc, 0) << script.out.substr(0, 2000) << Sh("cat " + dir.File("script.err")).out;

  const Callers ours = FromFolded(folded.out), theirs = FromPerfScript(script.out);
  ASSERT_TRUE(ours.count("fl_d")) << folded.out.substr(0, 2000);
  ASSERT_TRUE(theirs.count("fl_d")) << script.out.substr(0, 2000);
  std::set<std::string> compared;
  for (const auto& [leaf, paths] : theirs) {
    const uint64_t n_theirs = Sum(paths);
    const auto it = ours.find(leaf);
    const uint64_t n_ours = it == ours.end() ? 0 : Sum(it->second);
    // Too few for shares in either. The two runs split their CPU time
    // differently (perf's stack copies are part of its run: on arm64's
    // PMU cycles it once had 34 samples in fl_cmp where tprof had 187),
    // so a leaf is compared where both have enough; fl_d, the leaf both
    // call paths reach, always is (below).
    if (n_theirs < 100 || n_ours < 100) continue;
    compared.insert(leaf);
    // The same callers: the paths that hold a real share (2%) in either
    // are the same, and at most 1% of either's samples are on a path the
    // other never walked. (Shares of paths are not compared: the two runs'
    // own CPU splits differ, perf's copies make up part of its run.)
    auto major = [](const std::map<std::string, uint64_t>& m) {
      std::set<std::string> out;
      const uint64_t n = Sum(m);
      for (const auto& [p, k] : m)
        if (k * 50 >= n) out.insert(p);
      return out;
    };
    auto unmatched = [](const std::map<std::string, uint64_t>& m,
                        const std::map<std::string, uint64_t>& other) {
      uint64_t k = 0;
      for (const auto& [p, n] : m)
        if (!other.count(p)) k += n;
      return k;
    };
    const std::string both = "\ntprof:\n" + Show(it->second) + "perf --call-graph dwarf:\n" + Show(paths);
    EXPECT_EQ(major(it->second), major(paths)) << leaf << both;
    EXPECT_LE(unmatched(it->second, paths) * 100, n_ours) << leaf << both;
    EXPECT_LE(unmatched(paths, it->second) * 100, n_theirs) << leaf << both;
    std::printf("  [vs perf dwarf] %s: tprof %llu samples on %zu caller paths, perf %llu on %zu\n",
                leaf.c_str(), static_cast<unsigned long long>(n_ours), it->second.size(),
                static_cast<unsigned long long>(n_theirs), paths.size());
  }
  EXPECT_TRUE(compared.count("fl_d")) << "fl_d: tprof " << Sum(ours.at("fl_d")) << " samples, perf "
                                      << Sum(theirs.at("fl_d")) << " (at least 100 each)";
  // Both paths to fl_d hold a real share: the comparison covers both.
  const auto& fl_d = ours.at("fl_d");
  for (const char* p : {"main;fl_a;fl_b;fl_c;fl_d", "main;fl_sort;fl_cmp;fl_d"}) {
    const auto n = fl_d.count(p) ? fl_d.at(p) : 0;
    EXPECT_GE(n * 5, Sum(fl_d)) << p << "\n" << Show(fl_d);
  }
}

}  // namespace
}  // namespace tprof::test
