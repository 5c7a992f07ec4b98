// tprofctl window list|show: the counting windows a recording kept in its
// profile (see windows_cli.h for why they are added at start).
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "tprof/analysis/profile_file.h"
#include "tprof/analysis/symbolizer.h"
#include "windows_cli.h"

namespace tprof::cli {

void AddWindowOptions(CLI::App* sub, std::vector<tprof_window_add>* out) {
  auto add = [out](const std::string& option, const std::vector<std::string>& values) {
    for (const std::string& value : values) {
      auto spec = option == "--profil" ? ParseProfilSpec(value) : ParseWindowSpec(value);
      if (!spec) throw CLI::ValidationError(option, spec.error().message());
      if (out->size() >= TPROF_MAX_WINDOWS)
        throw CLI::ValidationError(option, "at most " + std::to_string(TPROF_MAX_WINDOWS) +
                                               " windows");
      out->push_back(*spec);
    }
  };
  sub->add_option_function<std::vector<std::string>>(
      "--window", [add](const std::vector<std::string>& v) { add("--window", v); },
      "counting window: kernel:START:LEN:BLOCK or pid=PID:START:LEN:BLOCK (with record, pid=0 "
      "is the command), kept in the profile (`tprofctl window --help`)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option_function<std::vector<std::string>>(
      "--profil", [add](const std::vector<std::string>& v) { add("--profil", v); },
      "profil(2) window PID:OFFSET:SCALE:BUFSIZ[:32]")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

namespace {

struct WindowOptions {
  std::string file = kDefaultProfilePath;
  int64_t only = -1;  // --id
  uint64_t width = 40;
};

void PrintHeader(const tprof_window_info& i) {
  std::printf("window %u: %s", i.id, WindowKindName(i.kind));
  if (i.kind != TPROF_WINDOW_KERNEL) std::printf(" pid %u", i.pid);
  if (i.kind == TPROF_WINDOW_PROFIL)
    std::printf(", offset 0x%llx, bufsiz %llu, scale 0x%x, %u-bit cells%s", i.start,
                i.length, i.scale, i.cell_bytes * 8, (i.flags & TPROF_WINDOW_OFF) ? " (off)" : "");
  else
    std::printf(", 0x%llx, %llu bytes in %u-byte blocks", i.start, i.length, i.block_bytes);
  std::printf(", %llu cells\n  in range %llu, out of range %llu"
              ", wait %llu",
              i.nr_cells, i.in_range, i.out_of_range, i.wait);
  if (i.untracked_forks) std::printf(", children not followed %llu", i.untracked_forks);
  std::printf("\n");
}

// " function+0xOFF file:line" for a cell's first address, from the profile
// beside the windows (its kallsyms snapshot, the process's mappings); ""
// when nothing names it. A process window's pid may have several spaces
// (exec): the one with a mapping over the address.
std::string CellName(Symbolizer* sym, const Profile& profile, const tprof_window_info& w,
                     uint64_t addr) {
  if (!sym) return "";
  const Location* loc = nullptr;
  if (w.kind == TPROF_WINDOW_KERNEL) {
    loc = &sym->Resolve(0, 0, addr, false);
  } else {
    for (const auto& [key, maps] : profile.mappings) {
      if (key.pid != w.pid) continue;
      for (const Mapping& m : maps)
        if (addr >= m.start && addr < m.end) loc = &sym->Resolve(key.pid, key.space_id, addr, true);
    }
    if (!loc) loc = &sym->Resolve(w.pid, 0, addr, true);  // JIT code by the pid's perf map
  }
  if (!loc->resolved()) return "";
  char off[24];
  std::snprintf(off, sizeof(off), "+0x%llx", static_cast<unsigned long long>(loc->offset));
  std::string name = "  " + loc->symbol + off;
  if (!loc->source_file.empty()) {
    size_t slash = loc->source_file.rfind('/');
    name += " " + loc->source_file.substr(slash == std::string::npos ? 0 : slash + 1) + ":" +
            std::to_string(loc->line);
  }
  return name;
}

int RunWindow(const WindowOptions& o, bool show) {
  const std::string& file = o.file;
  const int64_t only = o.only;
  const uint64_t width = std::clamp<uint64_t>(o.width, 1, 200);
  auto read = ReadProfile(file);
  if (!read) return ReportError(read.error(), Doing::kReadProfile);
  const Profile& profile = *read;
  std::vector<WindowCounts> windows = profile.windows;
  // A recording made before the profile kept them (format 1.5 and older)
  // left them beside it.
  if (windows.empty() && ::access((file + ".windows").c_str(), F_OK) == 0) {
    auto beside = ReadWindowsFile(file + ".windows");
    if (!beside) return ReportError(beside.error(), Doing::kReadProfile);
    windows = std::move(*beside);
  }
  if (windows.empty()) {
    std::fprintf(stderr, "tprofctl: %s has no counting windows (record with --window or "
                         "--profil)\n", file.c_str());
    return 1;
  }
  // The profile names the cells' addresses.
  std::unique_ptr<Symbolizer> sym;
  if (show) sym = std::make_unique<Symbolizer>(profile);
  for (const WindowCounts& w : windows) {
    if (only >= 0 && w.info.id != only) continue;
    PrintHeader(w.info);
    if (!show) continue;
    uint32_t max = 0;
    for (uint32_t c : w.cells) max = std::max(max, c);
    for (size_t c = 0; c < w.cells.size(); ++c) {
      if (!w.cells[c]) continue;
      uint64_t addr = 0;
      bool has_addr = WindowCellAddress(w.info, c, &addr);
      size_t bar = static_cast<size_t>((static_cast<uint64_t>(w.cells[c]) * width + max - 1) / max);
      if (has_addr)
        std::printf("  0x%016" PRIx64 " %10u  %-*s%s\n", addr, w.cells[c], static_cast<int>(width),
                    std::string(bar, '#').c_str(),
                    CellName(sym.get(), profile, w.info, addr).c_str());
      else
        std::printf("  cell %-12zu %10u  %s\n", c, w.cells[c], std::string(bar, '#').c_str());
    }
  }
  return 0;
}

}  // namespace

void AddWindowCommand(CommandLine& cli) {
  CLI::App* window = AddSubcommand(
      cli.app(),
      "window",
      "The counting windows a recording kept in its profile. Windows are added when "
      "recording starts: `tprofctl start|record --window kernel:START:LEN:BLOCK --window "
      "pid=PID:START:LEN:BLOCK --profil PID:OFFSET:SCALE:BUFSIZ[:32]` (numbers decimal or "
      "0x-hex; BLOCK a power of two; with record, pid=0 is the command; profil windows end at "
      "exec, as profil(2) does). At stop the recording keeps them in its profile. There is no "
      "`window add`: only the recorder's own descriptor may add windows to its session.");
  window->require_subcommand(1);
  auto o = std::make_shared<WindowOptions>();
  const std::string input_help = "the profile (default " + std::string(kDefaultProfilePath) + ")";
  CLI::App* list = cli.Add(*window, "list", "each window's header and counters",
                           [o] { return RunWindow(*o, false); });
  list->add_option("-i,--input", o->file, input_help);
  CLI::App* show = cli.Add(*window, "show", "the headers and histograms",
                           [o] { return RunWindow(*o, true); });
  show->add_option("-i,--input", o->file, input_help);
  show->add_option("--id", o->only, "only window N")->transform(Decimal());
  show->add_option("--width", o->width, "histogram bars of up to N columns (1..200, default 40)")
      ->transform(Decimal());
}

}  // namespace tprof::cli
