// tprofctl annotate on recordings of real runs: the hot line of a workload
// whose lines are known (tprof-wl-annotate), JIT code, a kernel function
// disassembled from /proc/kcore; and window show naming its cells.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "guest_env.h"

namespace tprof::test {
namespace {

using Json = nlohmann::json;

uint64_t N(const Json& v) { return v.get<uint64_t>(); }

Json RunJson(const std::string& command) {
  std::string out;
  int rc = RunCommand(command + " 2>&1", &out);
  EXPECT_EQ(rc, 0) << command << "\n" << out;
  Json j = Json::parse(out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << command << " printed no JSON:\n" << out;
  return j;
}

// Every instruction's samples add up to the function's, and every line's
// to the sum of its instructions'.
void ExpectConsistentCounts(const Json& a) {
  uint64_t total = 0;
  std::map<std::pair<std::string, uint64_t>, uint64_t> by_line;
  for (const Json& ins : a.at("instructions")) {
    total += N(ins.at("samples"));
    if (ins.contains("line")) by_line[{ins.at("file"), N(ins.at("line"))}] += N(ins.at("samples"));
  }
  EXPECT_EQ(total, N(a.at("samples")));
  for (const Json& f : a.at("files"))
    for (const Json& l : f.at("lines"))
      EXPECT_EQ(N(l.at("samples")), (by_line[{f.at("path"), N(l.at("line"))}]))
          << f.at("path") << ":" << l.at("line");
}

TEST(Annotate, HotLineAndItsLoopInstructionsComeFirst) {
  std::string out;
  ASSERT_EQ(RunCommand("tprof-wl-annotate --lines", &out), 0) << out;
  unsigned hot = 0, warm = 0;
  ASSERT_EQ(std::sscanf(out.c_str(), "hot=%u warm=%u", &hot, &warm), 2) << out;
  // 1.5 s of CPU at 1 kHz, nearly all of it in wl_lines's two loops; run
  // longer where that brings fewer than 300 samples (288 once in CI).
  Json a;
  const uint64_t samples = RecordUntil(1500, 300, [&](unsigned ms) -> uint64_t {
    std::string rec;
    EXPECT_EQ(RunCommand("cd /tmp && tprofctl record -o /tmp/annotate.data -- tprof-wl-annotate "
                         "--ms " + std::to_string(ms) + " 2>&1",
                         &rec),
              0)
        << rec;
    a = RunJson("tprofctl annotate -i /tmp/annotate.data --format json wl_lines");
    return a.is_object() && a.contains("samples") ? N(a.at("samples")) : 0;
  });
  ASSERT_TRUE(a.is_object());
  EXPECT_EQ(a.at("format_version"), 1);
  EXPECT_EQ(a.at("function"), "wl_lines");
  EXPECT_EQ(a.at("space"), "main");
  EXPECT_EQ(a.at("disassembly_note"), "") << "the executable's code is readable";
  ASSERT_GE(samples, 300u);
  ExpectConsistentCounts(a);

  // Source: the hot line has the most samples, about 16/17 of them (the
  // warm loop, the same body, runs 1/16 as many iterations).
  ASSERT_FALSE(a.at("files").empty());
  uint64_t hot_n = 0, warm_n = 0, top_line = 0, top_n = 0;
  for (const Json& l : a.at("files").at(0).at("lines")) {
    const uint64_t n = N(l.at("samples")), line = N(l.at("line"));
    if (line == hot) hot_n = n;
    if (line == warm) warm_n = n;
    if (n > top_n) top_n = n, top_line = line;
  }
  EXPECT_EQ(top_line, hot) << "the line with the most samples is not the hot loop's";
  EXPECT_GE(hot_n * 100, samples * 80) << hot_n << " of " << samples << " on the hot line";
  EXPECT_LE(warm_n * 100, samples * 20) << warm_n << " of " << samples << " on the warm line";

  // Instructions: the hottest is on the hot line, so is every instruction
  // with 10% of the samples or more, and the loop's multiply is among them.
  std::vector<const Json*> by_samples;
  bool hot_multiply = false;
  for (const Json& ins : a.at("instructions")) {
    by_samples.push_back(&ins);
    const std::string text = ins.at("text");
    if (ins.value("line", 0u) == hot &&
        (text.rfind("imul", 0) == 0 || text.rfind("mul", 0) == 0 || text.rfind("madd", 0) == 0))
      hot_multiply = true;
  }
  std::stable_sort(by_samples.begin(), by_samples.end(), [](const Json* x, const Json* y) {
    return N(x->at("samples")) > N(y->at("samples"));
  });
  ASSERT_FALSE(by_samples.empty());
  EXPECT_EQ(by_samples[0]->value("line", 0u), hot) << by_samples[0]->dump();
  for (const Json* ins : by_samples) {
    if (N(ins->at("samples")) * 10 >= samples) {
      EXPECT_EQ(ins->value("line", 0u), hot) << ins->dump();
    }
  }
  EXPECT_TRUE(hot_multiply) << "no multiply disassembled on the hot line";

  // The text form marks the hottest instruction and names the line.
  out.clear();
  ASSERT_EQ(RunCommand("tprofctl annotate -i /tmp/annotate.data wl_lines 2>&1", &out), 0) << out;
  EXPECT_NE(out.find("annotate.c:" + std::to_string(hot)), std::string::npos) << out;
  EXPECT_NE(out.find(" > +0x"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(RunCommand("tprofctl annotate -i /tmp/annotate.data no_such_function 2>&1", &out), 1)
      << out;
  EXPECT_NE(out.find("no samples in function no_such_function"), std::string::npos) << out;

  // Sources moved since the build (the guest has none): --source-dir
  // finds the file by its name, and each line shows that file's text.
  ASSERT_EQ(::mkdir("/tmp/annotate-src", 0755) == 0 || errno == EEXIST, true);
  {
    std::ofstream src("/tmp/annotate-src/annotate.c");
    for (unsigned l = 1; l <= hot + 20; l++) src << "/* line " << l << (l == hot ? " hot */" : " */") << "\n";
  }
  Json moved = RunJson(
      "tprofctl annotate -i /tmp/annotate.data --source-dir /nonexistent --source-dir /tmp/annotate-src "
      "--format json wl_lines");
  ASSERT_FALSE(moved.at("files").empty());
  EXPECT_TRUE(moved.at("files").at(0).at("read")) << moved.at("files").at(0).dump();
  bool hot_text = false;
  for (const Json& l : moved.at("files").at(0).at("lines"))
    if (N(l.at("line")) == hot) hot_text = l.value("text", "") == "/* line " + std::to_string(hot) + " hot */";
  EXPECT_TRUE(hot_text) << moved.at("files").at(0).dump();
}

TEST(Annotate, JitCodeShowsSampledAddressesAndSaysWhyNoDisassembly) {
  std::string out;
  Json a;
  const uint64_t samples = RecordUntil(500, 100, [&](unsigned ms) -> uint64_t {
    out.clear();
    EXPECT_EQ(RunCommand("cd /tmp && tprofctl record -o /tmp/annotate-jit.data -- tprof-wl-jit "
                         "--ms " + std::to_string(ms) + " 2>&1",
                         &out),
              0)
        << out;
    a = RunJson("tprofctl annotate -i /tmp/annotate-jit.data --format json jit_hot_loop");
    return a.is_object() && a.contains("samples") ? N(a.at("samples")) : 0;
  });
  ASSERT_TRUE(a.is_object());
  EXPECT_EQ(a.at("space"), "jit");
  EXPECT_NE(a.at("disassembly_note").get<std::string>().find("JIT"), std::string::npos);
  EXPECT_GE(samples, 100u);
  ExpectConsistentCounts(a);
  for (const Json& ins : a.at("instructions")) EXPECT_LT(N(ins.at("offset")), 64u);
}

// As root, the guest's /proc/kcore holds the running kernel's text.
TEST(Annotate, KernelFunctionIsDisassembledFromKcore) {
  std::string out;
  ASSERT_EQ(RunCommand("cd /tmp && tprofctl record -o /tmp/annotate-k.data -- tprof-wl-faults 20000 1 "
                       ">/dev/null 2>&1",
                       &out),
            0)
      << out;
  Json dump = RunJson("tprofctl dump -i /tmp/annotate-k.data --by symbol --format json");
  std::string function;
  uint64_t most = 0;
  for (const Json& pf : dump.at("functions"))
    for (const Json& f : pf.at("functions"))
      if (f.at("space") == "kernel" && f.at("resolved") && N(f.at("samples")) > most)
        most = N(f.at("samples")), function = f.at("function");
  ASSERT_FALSE(function.empty()) << "no kernel samples: " << dump.dump();
  Json a = RunJson("tprofctl annotate -i /tmp/annotate-k.data --format json " + function);
  ASSERT_TRUE(a.is_object());
  EXPECT_EQ(a.at("space"), "kernel");
  EXPECT_GE(N(a.at("samples")), most);  // every process's
  ExpectConsistentCounts(a);
  struct stat st;
  if (::stat("/proc/kcore", &st) != 0) {
    // A kernel without CONFIG_PROC_KCORE (the KUnit debug kernel; Debian's
    // have it): the sampled addresses with their counts, and why no text.
    EXPECT_NE(a.at("disassembly_note").get<std::string>().find("cannot read /proc/kcore"),
              std::string::npos)
        << a.dump();
    EXPECT_FALSE(a.at("instructions").empty());
    return;
  }
  EXPECT_EQ(a.at("disassembly_note"), "") << function;
  EXPECT_EQ(a.at("code_source"), "/proc/kcore");
  size_t with_text = 0;
  for (const Json& ins : a.at("instructions"))
    with_text += !ins.at("text").get<std::string>().empty();
  EXPECT_GT(with_text, 1u) << a.dump();
}

// window show names each cell's function.
TEST(Annotate, WindowShowNamesTheCells) {
  std::string out;
  ASSERT_EQ(RunCommand("awk '$3 == \"_stext\" {print $1}' /proc/kallsyms", &out), 0);
  ASSERT_FALSE(out.empty());
  const std::string stext = "0x" + out.substr(0, out.find('\n'));
  out.clear();
  ASSERT_EQ(RunCommand("cd /tmp && tprofctl record -o /tmp/annotate-w.data --window kernel:" +
                           stext + ":0x1000000:0x10000 -- tprof-wl-faults 20000 1 >/dev/null 2>&1",
                       &out),
            0)
      << out;
  out.clear();
  ASSERT_EQ(RunCommand("tprofctl window show -i /tmp/annotate-w.data 2>&1", &out), 0) << out;
  // "  0xffffffff81200000        12  ####  some_function+0x1f0"
  EXPECT_NE(out.find("#  "), std::string::npos) << out;
  EXPECT_NE(out.find("+0x"), std::string::npos) << "cells without names:\n" << out;
}

}  // namespace
}  // namespace tprof::test
