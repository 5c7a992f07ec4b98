// tprofctl as a user runs it in the guest.
#include <sys/utsname.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "../common/json.h"
#include "tprof/output/json_format.h"
#include "guest_env.h"

namespace tprof::test {
namespace {

TEST(TprofctlStatus, JsonHoldsVersionsCpusAndCounters) {
  std::string out;
  ASSERT_EQ(RunCommand("tprofctl status --json", &out), 0) << out;
  std::string error;
  auto doc = ParseJson(out, &error);
  ASSERT_TRUE(doc) << error << "\n" << out;
  const Json& v = *doc;
  for (const char* key : {"abi_version", "module_version", "kernel_release", "ncpus", "state",
                          "total", "cpus"})
    ASSERT_TRUE(v.contains(key)) << "missing key " << key << " in " << out;
  EXPECT_EQ(v.value("format_version", 0), tprof::kJsonFormatVersion) << out;
  EXPECT_EQ(v.at("abi_version").get<std::string>(),
            std::to_string(TPROF_ABI_MAJOR) + "." + std::to_string(TPROF_ABI_MINOR));
  EXPECT_EQ(v.at("module_version").get<std::string>(), TPROF_VERSION);
  utsname u{};
  ASSERT_EQ(::uname(&u), 0);
  EXPECT_EQ(v.at("kernel_release").get<std::string>(), u.release);
  EXPECT_EQ(v.at("state").get<std::string>(), "idle");
  EXPECT_GT(v.at("total").at("context_switches").get<double>(), 0);
  for (const char* key : {"forks", "execs", "exits"})
    EXPECT_TRUE(v.at("total").contains(key)) << key;
  ASSERT_EQ(v.at("cpus").size(), size_t(v.at("ncpus").get<double>()));
  for (const Json& cpu : v.at("cpus"))
    for (const char* key : {"cpu", "online", "context_switches", "forks", "execs", "exits"})
      EXPECT_TRUE(cpu.contains(key)) << key;
}

TEST(TprofctlStatus, TextNamesTheStateAndTotals) {
  std::string out;
  ASSERT_EQ(RunCommand("tprofctl status", &out), 0) << out;
  EXPECT_NE(out.find("state:    idle"), std::string::npos) << out;
  EXPECT_NE(out.find("total"), std::string::npos) << out;
}

TEST(Tprofctl, UnknownCommandOrOptionIsAUsageError) {
  std::string out;
  EXPECT_EQ(RunCommand("tprofctl frobnicate 2>&1", &out), 2) << out;
  EXPECT_NE(out.find("unknown command 'frobnicate'"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(RunCommand("tprofctl status --bogus 2>&1", &out), 2) << out;
  EXPECT_NE(out.find("--bogus"), std::string::npos) << out;
}

TEST(Tprofctl, AMissingValueIsAUsageErrorThatSaysSo) {
  std::string out;
  EXPECT_EQ(RunCommand("tprofctl dump --top 2>&1", &out), 2) << out;
  EXPECT_NE(out.find("tprofctl dump: --top needs a value"), std::string::npos) << out;
}

TEST(Tprofctl, VersionNamesTheReleaseAndTheAbi) {
  std::string out;
  ASSERT_EQ(RunCommand("tprofctl --version", &out), 0) << out;
  EXPECT_EQ(out, "tprofctl " TPROF_VERSION " (tprof ABI " + std::to_string(TPROF_ABI_MAJOR) + "." +
                     std::to_string(TPROF_ABI_MINOR) + ")\n");
}

// --x=v, -xV and -x V spell the same options as --x v.
TEST(Tprofctl, EqualsAndAttachedShortFormsSetTheOptions) {
  std::string out;
  ASSERT_EQ(RunCommand("cd /tmp && tprofctl record -F250 -o/tmp/forms.data --by=process -- true "
                       "2>&1",
                       &out),
            0)
      << out;
  out.clear();
  ASSERT_EQ(RunCommand("tprofctl dump --input=/tmp/forms.data --format=json", &out), 0) << out;
  std::string error;
  auto doc = ParseJson(out, &error);
  ASSERT_TRUE(doc) << error << "\n" << out.substr(0, 500);
  EXPECT_EQ(doc->at("attributes").at("frequency_hz").get<std::string>(), "250") << "-F250";
  out.clear();
  EXPECT_EQ(RunCommand("tprofctl dump --input /tmp/forms.data --top=abc 2>&1", &out), 2) << out;
  EXPECT_NE(out.find("needs a decimal number"), std::string::npos) << out;
  ::unlink("/tmp/forms.data");
}

}  // namespace
}  // namespace tprof::test
