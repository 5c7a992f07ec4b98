#include "command_line.h"

#include <linux/tprof.h>

#include <cctype>
#include <iostream>
#include <string>
#include <vector>

namespace tprof::cli {

namespace {

// The innermost subcommand the command line chose (the app itself if none).
const CLI::App* Chosen(const CLI::App& app) {
  const CLI::App* cur = &app;
  while (!cur->get_subcommands().empty()) cur = cur->get_subcommands().front();
  return cur;
}

// "tprofctl dump" for the chosen command.
std::string ChosenPath(const CLI::App& app) {
  std::string path = app.get_name();
  for (const CLI::App* cur = &app; !cur->get_subcommands().empty();) {
    cur = cur->get_subcommands().front();
    path += " " + cur->get_name();
  }
  return path;
}

}  // namespace

CLI::App* AddSubcommand(CLI::App& parent, const std::string& name, const std::string& description) {
  // The list of commands shows the first sentence; the command's help all.
  const size_t end = description.find(". ");
  if (end == std::string::npos) return parent.add_subcommand(name, description);
  CLI::App* sub = parent.add_subcommand(name, description.substr(0, end + 1));
  sub->footer(description);
  return sub;
}

const CLI::Validator& Decimal() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        if (text.empty() || text.size() > 20) return "needs a decimal number, got '" + text + "'";
        for (char c : text)
          if (!std::isdigit(static_cast<unsigned char>(c)))
            return "needs a decimal number, got '" + text + "'";
        // Leading zeros would make CLI11 read octal.
        size_t nz = text.find_first_not_of('0');
        text = nz == std::string::npos ? "0" : text.substr(nz);
        return "";
      },
      "N");
  return v;
}

const CLI::Validator& BufferKb() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        // After Decimal(): digits only, at most 20 of them (stoull's range
        // ends at 20 digits: nine are plenty).
        const unsigned long long kb = text.size() > 9 ? ~0ull : std::stoull(text);
        constexpr unsigned long long kMin = TPROF_SAMPLING_MIN_HALF_BYTES / 1024;
        constexpr unsigned long long kMax = TPROF_SAMPLING_MAX_HALF_BYTES / 1024;
        if (kb < kMin || kb > kMax || (kb & (kb - 1)) != 0)
          return text + " KiB is not a power of two from " + std::to_string(kMin) + " to " +
                 std::to_string(kMax);
        return "";
      },
      "");  // the option's help says it: no second, different range beside its type
  return v;
}

std::string BufferKbHelp() {
  return "KiB in each half of a CPU's double buffer: a power of two from " +
         std::to_string(TPROF_SAMPLING_MIN_HALF_BYTES / 1024) + " to " +
         std::to_string(TPROF_SAMPLING_MAX_HALF_BYTES / 1024) + " (default " +
         std::to_string(TPROF_SAMPLING_DEFAULT_HALF_BYTES / 1024) + ", with -g 256)";
}

std::string UsageMessage(const CLI::Error& e) {
  const std::string what = e.what();
  auto starts = [&](const std::string& p) { return what.compare(0, p.size(), p) == 0; };
  // "--top: 1 required UINT missing": the option came last, or before another option.
  const size_t colon = what.find(": ");
  if (colon != std::string::npos && what.find(" required ", colon) != std::string::npos &&
      what.size() > 8 && what.compare(what.size() - 8, 8, " missing") == 0)
    return what.substr(0, colon) + " needs a value";
  if (const std::string p = "Could not convert: "; starts(p)) {
    const size_t eq = what.find(" = ", p.size());
    if (eq != std::string::npos)
      return what.substr(p.size(), eq - p.size()) + ": bad value '" + what.substr(eq + 3) + "'";
  }
  for (const std::string p : {"The following argument was not expected: ",
                              "The following arguments were not expected: "})
    if (starts(p)) return "unexpected " + what.substr(p.size());
  return what;
}

CommandLine::CommandLine(const std::string& version)
    : app_("tprof's command-line tool: a sampling profiler, per-thread metrics, counting "
           "windows and PMU programs.",
           "tprofctl") {
  app_.set_version_flag("--version", version, "print tprofctl's version and the ABI it speaks");
  app_.require_subcommand(1);
  app_.footer("`tprofctl COMMAND --help` describes a command's options; `tprofctl report` is "
              "`tprofctl dump`, as perf names it.");
}

CLI::App* CommandLine::Add(CLI::App& parent, const std::string& name,
                           const std::string& description, std::function<int()> run) {
  CLI::App* sub = AddSubcommand(parent, name, description);
  actions_[sub] = std::move(run);
  return sub;
}

void CommandLine::AddCommandTail(CLI::App* sub, std::vector<std::string>* cmd,
                                 const std::string& help) {
  sub->add_option("CMD", *cmd, help);
  tails_[sub] = cmd;
}

std::optional<int> CommandLine::Parse(int argc, const char* const* argv, std::ostream& out,
                                      std::ostream& err) {
  std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  if (args.empty()) {
    err << app_.help();
    return kExitUsage;
  }
  if (args[0] == "help") args[0] = "--help";  // `tprofctl help`, as before
  // perf's name for it. Not a CLI11 alias: the lists of commands (help,
  // man pages, completion) keep one name per command.
  if (args[0] == "report") args[0] = "dump";
  bool known = false;
  for (const CLI::App* sub : app_.get_subcommands({})) known |= sub->check_name(args[0]);
  if (args[0][0] != '-' && !known) {
    err << "tprofctl: unknown command '" << args[0] << "' (`tprofctl --help` lists them)\n";
    return kExitUsage;
  }
  // What follows `--` is a command's, never ours: CLI11 2.1 alone parses
  // `record -- sh -c X` as record's -c in some orders, so it never sees it.
  std::vector<std::string> tail;
  bool dashes = false;
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i] == "--") {
      tail.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      args.resize(i);
      dashes = true;
      break;
    }
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses from the back
    app_.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app_.exit(e, out, err);
  } catch (const CLI::CallForAllHelp& e) {
    return app_.exit(e, out, err);
  } catch (const CLI::CallForVersion& e) {
    return app_.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    const std::string path = ChosenPath(app_);
    err << path << ": " << UsageMessage(e) << "\n(`" << path << " --help` describes the options)\n";
    return kExitUsage;
  }
  const CLI::App* chosen = Chosen(app_);
  if (!actions_.count(chosen)) {  // e.g. `tprofctl pmu` alone
    err << chosen->help();
    return kExitUsage;
  }
  if (dashes) {
    auto it = tails_.find(chosen);
    if (it == tails_.end()) {
      err << ChosenPath(app_) << ": takes no -- CMD\n";
      return kExitUsage;
    }
    it->second->insert(it->second->end(), tail.begin(), tail.end());
  }
  return std::nullopt;
}

int CommandLine::RunChosen() {
  auto it = actions_.find(Chosen(app_));
  return it == actions_.end() ? kExitUsage : it->second();
}

int CommandLine::Run(int argc, const char* const* argv) {
  if (std::optional<int> done = Parse(argc, argv, std::cout, std::cerr)) return *done;
  return RunChosen();
}

}  // namespace tprof::cli
