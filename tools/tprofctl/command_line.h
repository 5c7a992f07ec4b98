// tprofctl's one option parser: a CLI::App with a subcommand per command.
// Each command file registers its subcommand, its options and the action
// that runs once the whole command line parsed (AddXxxCommand in
// commands.h); main() only calls Run().
#ifndef TPROF_TOOLS_TPROFCTL_COMMAND_LINE_H_
#define TPROF_TOOLS_TPROFCTL_COMMAND_LINE_H_

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace tprof::cli {

// Exit statuses: 0 success, 1 failure, 2 usage error.
constexpr int kExitUsage = 2;

class CommandLine {
 public:
  // `version` is what `tprofctl --version` prints.
  explicit CommandLine(const std::string& version);
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  CLI::App& app() { return app_; }

  // Adds `PARENT NAME`; `run` returns the exit status and is called only
  // when NAME is the command given.
  CLI::App* Add(CLI::App& parent, const std::string& name, const std::string& description,
                std::function<int()> run);

  // Lets `PARENT NAME ... -- CMD [ARGS...]` put CMD and its arguments,
  // untouched, into *cmd (also `NAME CMD` without `--` while CMD has no
  // dashed arguments). Registers the positional for the help too.
  void AddCommandTail(CLI::App* sub, std::vector<std::string>* cmd, const std::string& help);

  // Parses argv. Returns the exit status when parsing ends the program
  // (help and --version on `out`: 0; a usage error on `err`: 2), nullopt
  // when the chosen command should run.
  [[nodiscard]] std::optional<int> Parse(int argc, const char* const* argv, std::ostream& out,
                                         std::ostream& err);

  // The chosen command's status (after a Parse that returned nullopt).
  [[nodiscard]] int RunChosen();

  // Parse, then the command.
  [[nodiscard]] int Run(int argc, const char* const* argv);

 private:
  CLI::App app_;
  std::map<const CLI::App*, std::function<int()>> actions_;
  std::map<const CLI::App*, std::vector<std::string>*> tails_;
};

// A subcommand that runs nothing itself (`window`, `pmu`): the list of
// commands shows the description's first sentence, its --help all of it.
CLI::App* AddSubcommand(CLI::App& parent, const std::string& name, const std::string& description);

// "needs a decimal number": unsigned options take digits only (CLI11 alone
// reads 010 as octal and -1 as a huge number). A transform (it strips
// leading zeros): add it with ->transform(Decimal()).
const CLI::Validator& Decimal();

// --buffer-kb's values: a power of two from the smallest to the largest
// half buffer the module takes (uapi), in KiB. A check, after Decimal().
const CLI::Validator& BufferKb();
// The help text that goes with it, the same in every command, its range
// and default from the uapi constants.
std::string BufferKbHelp();

// CLI11's message for an error, in tprofctl's words where they differ
// ("--top needs a value"). Exposed for tests.
std::string UsageMessage(const CLI::Error& e);

}  // namespace tprof::cli

#endif  // TPROF_TOOLS_TPROFCTL_COMMAND_LINE_H_
