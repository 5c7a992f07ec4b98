// tprofctl window list|show: the counting windows a recorder saved beside
// its profile (see windows_cli.h for why they are added at start).
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "tprof/profile_file.h"
#include "windows_cli.h"

namespace tprof::cli {

bool ParseWindowOption(const std::string& option, const std::string& value,
                       std::vector<tprof_window_add>* out) {
  auto spec = option == "--profil" ? ParseProfilSpec(value) : ParseWindowSpec(value);
  if (!spec) {
    std::fprintf(stderr, "tprofctl: %s: %s\n", option.c_str(), spec.error().message().c_str());
    return false;
  }
  if (out->size() >= TPROF_MAX_WINDOWS) {
    std::fprintf(stderr, "tprofctl: at most %d windows\n", TPROF_MAX_WINDOWS);
    return false;
  }
  out->push_back(*spec);
  return true;
}

Status ApplyWindows(int fd, const std::vector<tprof_window_add>& windows, pid_t pid0) {
  for (tprof_window_add w : windows) {
    if (w.kind == TPROF_WINDOW_PROFIL && w.pid == 0 && pid0 > 0)
      return Error::FromErrno(EINVAL, "--profil 0:...: profil is turned off by exec, so it cannot "
                                      "follow the recorded command; use --window pid=0:...");
    if (w.kind != TPROF_WINDOW_KERNEL && w.pid == 0 && pid0 > 0) w.pid = static_cast<uint32_t>(pid0);
    if (auto r = AddWindow(fd, w); !r) return r.error();
  }
  return OkStatus();
}

Status SaveWindows(int fd, const std::string& profile_path) {
  const std::string path = profile_path + ".windows";
  auto windows = ReadWindows(fd);
  if (!windows) return windows.error();
  if (windows->empty()) {
    ::unlink(path.c_str());
    return OkStatus();
  }
  return WriteWindowsFile(*windows, path);
}

namespace {

void WindowUsage(FILE* out) {
  std::fprintf(out,
               "usage: tprofctl window list [-i FILE]\n"
               "       tprofctl window show [-i FILE] [--id N] [--width N]\n\n"
               "Counting windows are added when recording starts:\n"
               "  tprofctl start|record --window kernel:START:LEN:BLOCK\n"
               "                        --window pid=PID:START:LEN:BLOCK\n"
               "                        --profil PID:OFFSET:SCALE:BUFSIZ[:32]\n"
               "(numbers decimal or 0x-hex; BLOCK a power of two; with record, pid=0 is the\n"
               "command; profil windows end at exec, as profil(2) does). At stop the recorder saves them to FILE.windows; FILE defaults to\n"
               "%s. A separate `window add` cannot exist: only the recorder's own\n"
               "descriptor may add windows to its session.\n",
               kDefaultProfilePath);
}

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

}  // namespace

int RunWindow(const Args& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    WindowUsage(args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::string sub = args[0];
  if (sub == "add") {
    WindowUsage(stderr);
    return 2;
  }
  if (sub != "list" && sub != "show") {
    std::fprintf(stderr, "tprofctl: unknown window command '%s'\n", sub.c_str());
    WindowUsage(stderr);
    return 2;
  }
  std::string file = kDefaultProfilePath;
  int64_t only = -1;
  uint64_t width = 40;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") return WindowUsage(stdout), 0;
    if (i + 1 >= args.size()) {
      std::fprintf(stderr, "tprofctl: unknown option or missing value '%s'\n", a.c_str());
      return 2;
    }
    if (a == "-i" || a == "--input") {
      file = args[++i];
    } else if (sub == "show" && (a == "--id" || a == "--width")) {
      auto n = ParseNumber(a, args[++i]);
      if (!n) return 2;
      if (a == "--id")
        only = static_cast<int64_t>(*n);
      else
        width = std::clamp<uint64_t>(*n, 1, 200);
    } else {
      std::fprintf(stderr, "tprofctl: unknown option '%s'\n", a.c_str());
      return 2;
    }
  }
  auto windows = ReadWindowsFile(file + ".windows");
  if (!windows) return ReportError(windows.error());
  for (const WindowCounts& w : *windows) {
    if (only >= 0 && w.info.id != only) continue;
    PrintHeader(w.info);
    if (sub == "list") continue;
    uint32_t max = 0;
    for (uint32_t c : w.cells) max = std::max(max, c);
    for (size_t c = 0; c < w.cells.size(); ++c) {
      if (!w.cells[c]) continue;
      uint64_t addr = 0;
      bool has_addr = WindowCellAddress(w.info, c, &addr);
      size_t bar = static_cast<size_t>((static_cast<uint64_t>(w.cells[c]) * width + max - 1) / max);
      if (has_addr)
        std::printf("  0x%016" PRIx64 " %10u  %s\n", addr, w.cells[c], std::string(bar, '#').c_str());
      else
        std::printf("  cell %-12zu %10u  %s\n", c, w.cells[c], std::string(bar, '#').c_str());
    }
  }
  return 0;
}

}  // namespace tprof::cli
