// tprofctl's option parser (tools/tprofctl/command_line.h): the forms a
// user types, the exit statuses and the messages of usage errors.
#include "../../tools/tprofctl/command_line.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace tprof::cli {
namespace {

struct Parsed {
  std::optional<int> status;  // nullopt: the command runs
  std::string out, err;
};

// A command line like tprofctl's: `dump --top N -o FILE -g`, `record ... -- CMD`.
class CommandLineTest : public ::testing::Test {
 protected:
  CommandLineTest() : cli_("tprofctl 9.9.9 (tprof ABI 1.7)") {
    CLI::App* dump = cli_.Add(cli_.app(), "dump", "Reports. More words.", [this] { return ran_ = 1, 0; });
    dump->add_option("--top", top_, "rows")->transform(Decimal());
    dump->add_option("-o,--output", output_, "file");
    dump->add_flag("-g,--callers", callers_, "callers");
    dump->add_option("--window", windows_, "repeatable")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    cli_.AddCommandTail(dump, &cmd_, "command");
  }

  Parsed Parse(std::vector<const char*> args) {
    args.insert(args.begin(), "tprofctl");
    Parsed p;
    std::ostringstream out, err;
    p.status = cli_.Parse(static_cast<int>(args.size()), args.data(), out, err);
    p.out = out.str();
    p.err = err.str();
    return p;
  }

  CommandLine cli_;
  size_t top_ = 0;
  std::string output_;
  bool callers_ = false;
  std::vector<std::string> cmd_, windows_;
  int ran_ = 0;
};

TEST_F(CommandLineTest, LongShortAndAttachedValueFormsAllWork) {
  Parsed p = Parse({"dump", "--top=7", "-ofile.data", "-g"});
  ASSERT_FALSE(p.status) << p.err;
  EXPECT_EQ(top_, 7u);
  EXPECT_EQ(output_, "file.data");
  EXPECT_TRUE(callers_);
  p = Parse({"dump", "--top", "8", "-o", "other.data"});
  ASSERT_FALSE(p.status) << p.err;
  EXPECT_EQ(top_, 8u);
  EXPECT_EQ(output_, "other.data");
  EXPECT_EQ(cli_.RunChosen(), 0);
  EXPECT_EQ(ran_, 1);
}

TEST_F(CommandLineTest, ArgumentsAfterDashDashPassThroughUntouched) {
  Parsed p = Parse({"dump", "-g", "--", "ls", "-l", "--top", "3", "-o"});
  ASSERT_FALSE(p.status) << p.err;
  EXPECT_EQ(cmd_, (std::vector<std::string>{"ls", "-l", "--top", "3", "-o"}));
  EXPECT_EQ(top_, 0u) << "CMD's --top is CMD's";
}

// A repeatable option right before `--` must not swallow the `--` (CLI11's
// default for a vector option does, and then parses CMD's -c as ours).
TEST_F(CommandLineTest, RepeatableOptionBeforeDashDashLeavesTheCommandAlone) {
  Parsed p = Parse({"dump", "--window", "a", "--window", "b", "--", "sh", "-c", "x", "-o", "y"});
  ASSERT_FALSE(p.status) << p.err;
  EXPECT_EQ(windows_, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(cmd_, (std::vector<std::string>{"sh", "-c", "x", "-o", "y"}));
  EXPECT_EQ(output_, "");
}

TEST_F(CommandLineTest, MissingValueIsAUsageErrorThatNamesTheOption) {
  Parsed p = Parse({"dump", "--top"});
  EXPECT_EQ(p.status, kExitUsage);
  EXPECT_NE(p.err.find("tprofctl dump: --top needs a value"), std::string::npos) << p.err;
  // Another option where the value belongs: still --top's error.
  p = Parse({"dump", "--top", "-g"});
  EXPECT_EQ(p.status, kExitUsage);
  EXPECT_NE(p.err.find("tprofctl dump: --top"), std::string::npos) << p.err;
}

TEST_F(CommandLineTest, NumbersAreDecimalOnly) {
  for (const char* bad : {"abc", "-1", "0x10", "1e3"}) {
    Parsed p = Parse({"dump", "--top", bad});
    EXPECT_EQ(p.status, kExitUsage) << bad;
    EXPECT_NE(p.err.find("needs a decimal number"), std::string::npos) << p.err;
  }
  Parsed p = Parse({"dump", "--top", "010"});
  ASSERT_FALSE(p.status) << p.err;
  EXPECT_EQ(top_, 10u) << "not octal";
}

TEST_F(CommandLineTest, UnknownCommandsAndOptionsAreUsageErrors) {
  Parsed p = Parse({"frobnicate"});
  EXPECT_EQ(p.status, kExitUsage);
  EXPECT_NE(p.err.find("unknown command 'frobnicate'"), std::string::npos) << p.err;
  p = Parse({"dump", "--bogus"});
  EXPECT_EQ(p.status, kExitUsage);
  EXPECT_NE(p.err.find("tprofctl dump: unexpected --bogus"), std::string::npos) << p.err;
  p = Parse({});
  EXPECT_EQ(p.status, kExitUsage);
  EXPECT_NE(p.err.find("dump"), std::string::npos) << "no command: the list of commands";
}

TEST_F(CommandLineTest, VersionAndHelpExitZeroOnStdout) {
  Parsed p = Parse({"--version"});
  EXPECT_EQ(p.status, 0);
  EXPECT_EQ(p.out, "tprofctl 9.9.9 (tprof ABI 1.7)\n");
  p = Parse({"--help"});
  EXPECT_EQ(p.status, 0);
  EXPECT_NE(p.out.find("dump"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("Reports."), std::string::npos) << "the first sentence in the list";
  EXPECT_EQ(p.out.find("More words."), std::string::npos) << "not the rest";
  p = Parse({"dump", "--help"});
  EXPECT_EQ(p.status, 0);
  EXPECT_NE(p.out.find("--top"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("More words."), std::string::npos) << p.out;
  EXPECT_EQ(ran_, 0);
}

// perf's `report` is dump.
TEST_F(CommandLineTest, ReportIsDump) {
  Parsed p = Parse({"report", "--top", "3"});
  ASSERT_FALSE(p.status) << p.err;
  EXPECT_EQ(top_, 3u);
  EXPECT_EQ(cli_.RunChosen(), 0);
  EXPECT_EQ(ran_, 1);
}

// --buffer-kb takes what the module takes, and its help says so once.
TEST_F(CommandLineTest, BufferKbIsAPowerOfTwoTheModuleTakes) {
  uint32_t kb = 0;
  CLI::App* rec = cli_.Add(cli_.app(), "rec", "Records.", [] { return 0; });
  rec->add_option("--buffer-kb", kb, BufferKbHelp())->transform(Decimal())->check(BufferKb());
  for (const char* bad : {"0", "1", "2", "100", "32768", "99999999999999999999"}) {
    Parsed p = Parse({"rec", "--buffer-kb", bad});
    EXPECT_EQ(p.status, kExitUsage) << bad;
    EXPECT_NE(p.err.find("is not a power of two from 4 to 16384"), std::string::npos) << p.err;
  }
  for (const char* good : {"4", "64", "16384"}) {
    Parsed p = Parse({"rec", "--buffer-kb", good});
    EXPECT_FALSE(p.status) << good << ": " << p.err;
    EXPECT_EQ(std::to_string(kb), good);
  }
  Parsed p = Parse({"rec", "--help"});
  EXPECT_NE(p.out.find("a power of two from 4 to 16384"), std::string::npos) << p.out;
  EXPECT_EQ(p.out.find(" in ["), std::string::npos) << "a second range beside the type: " << p.out;
}

}  // namespace
}  // namespace tprof::cli
