// tprofctl archive: a recording reported after the sampled binary is gone,
// from the archive (dump --symfs), as on another machine.
#include <string>

#include <gtest/gtest.h>

#include "../common/json.h"
#include "../common/temp_dir.h"
#include "guest_env.h"

namespace tprof::test {
namespace {

// Samples of `function` over every process's table of a dump's JSON.
uint64_t FunctionSamples(const Json& j, const std::string& function) {
  uint64_t n = 0;
  for (const Json& pf : j.at("functions"))
    for (const Json& f : pf.at("functions"))
      if (f.at("function").get<std::string>() == function) n += f.at("samples").get<uint64_t>();
  return n;
}

Json DumpJson(const std::string& args) {
  std::string out;
  const int rc = RunCommand("tprofctl dump --format json " + args + " 2>/dev/null", &out);
  EXPECT_EQ(rc, 0) << args << ": " << out;
  std::string error;
  auto doc = ParseJson(out, &error);
  EXPECT_TRUE(doc) << args << ": " << error << "\n" << out.substr(0, 2000);
  return doc ? *doc : Json();
}

TEST(Archive, ADumpWithSymfsNamesFunctionsOfARemovedBinary) {
  TempDir dir;
  const std::string d = dir.path();
  std::string out;
  // A copy of the workload, run from a path that will be gone at report time.
  ASSERT_EQ(RunCommand("cd " + d + " && cp \"$(command -v tprof-wl-shares)\" ./wl && tprofctl record "
                       "-o rec.data -- ./wl --ms 500 >/dev/null 2>&1 && tprofctl archive -i rec.data "
                       "-o arch 2>&1",
                       &out),
            0)
      << out;
  EXPECT_NE(out.find(" 0 not packed"), std::string::npos) << out;
  ASSERT_EQ(RunCommand("rm " + d + "/wl", &out), 0) << out;

  Json with = DumpJson("--symfs " + d + "/arch -i " + d + "/arch/tprof.data");
  ASSERT_TRUE(with.is_object());
  const uint64_t alpha = FunctionSamples(with, "wl_alpha");
  EXPECT_GT(alpha, 0u) << "the archived binary names wl_alpha";

  Json without = DumpJson("-i " + d + "/arch/tprof.data");
  ASSERT_TRUE(without.is_object());
  EXPECT_EQ(FunctionSamples(without, "wl_alpha"), 0u) << "the binary is gone: only the archive has it";

  // The hint at the unnamed rows (wl+0x...): once, where function rows are
  // shown, and only of the process shown.
  auto hints = [&](const std::string& args) {
    std::string err;
    EXPECT_EQ(RunCommand("tprofctl dump " + args + " -i " + d + "/arch/tprof.data 2>&1 >/dev/null",
                         &err),
              0)
        << err;
    size_t n = 0;
    for (size_t at = err.find(d + "/wl have no function name"); at != std::string::npos;
         at = err.find(d + "/wl have no function name", at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(hints(""), 1u) << "the default report: process and function tables, one hint";
  EXPECT_EQ(hints("--by symbol"), 1u);
  EXPECT_EQ(hints("--by process"), 0u) << "no function rows to explain";
  EXPECT_EQ(hints("--pid 0"), 0u) << "the idle row has no files";
  EXPECT_EQ(hints("--symfs " + d + "/arch"), 0u) << "the archive names them";
}

}  // namespace
}  // namespace tprof::test
