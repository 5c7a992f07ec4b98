// Counting windows (ABI 1.3): address histograms of the samples of a
// running SamplingSession, in the kernel or in one process, and profil(2)
// windows. They are added on the session's own descriptor (only its owner
// may) and read while it runs or after Stop(), until it is destroyed.
//
// A recording keeps its session's windows in its profile (Recorder::Finish()
// reads them; profile_file.h's `window` lines). FILE.windows, which
// recorders before profile format 1.6 wrote beside a profile, is text:
//   tprof-windows 1
//   window id=0 kind=process pid=42 start=0x401000 length=4096 block=64 (...)
//     (...) scale=0 flags=0 cells=64 cell_bytes=4 in_range=9 out_of_range=3
//     (...) wait=0 untracked_forks=0 procs=1      (all on one line)
//   c 3 7          (cell index, count: nonzero cells only)
//   c 4 2
//   window id=1 ...
#ifndef TPROF_WINDOWS_H_
#define TPROF_WINDOWS_H_

#include <linux/tprof.h>

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tprof/base/expected.h"

namespace tprof {

struct WindowCounts {
  tprof_window_info info{};
  std::vector<uint32_t> cells;  // info.nr_cells values (16-bit cells widened)

  bool operator==(const WindowCounts& o) const;
};

// "kernel:START:LEN:BLOCK" or "pid=PID:START:LEN:BLOCK" (numbers decimal
// or 0x-hex; pid 0 is the adding process).
Expected<tprof_window_add> ParseWindowSpec(const std::string& spec);
// "PID:OFFSET:SCALE:BUFSIZ[:32]": profil(buff, BUFSIZ, OFFSET, SCALE) for
// process PID, 16-bit cells or (":32") 32-bit ones.
Expected<tprof_window_add> ParseProfilSpec(const std::string& spec);

// The ioctls, on a session's descriptor (SamplingSession::fd()).
Expected<tprof_window_add> AddWindow(int fd, const tprof_window_add& spec);
// Adds each window in turn. A process or profil window of pid 0 means
// `command` (a recorded command's pid) if nonzero; a profil window cannot
// follow a command (exec turns profil off): EINVAL.
[[nodiscard]] Status AddWindows(int fd, const std::vector<tprof_window_add>& windows,
                                pid_t command = 0);
Expected<std::vector<tprof_window_info>> ListWindows(int fd);
Expected<WindowCounts> ReadWindow(int fd, uint32_t id);
Expected<std::vector<WindowCounts>> ReadWindows(int fd);

// The lowest address counted in a cell (address windows: start + i *
// block; profil: the first pc whose cell is i). false if none.
bool WindowCellAddress(const tprof_window_info& info, uint64_t cell, uint64_t* addr);
const char* WindowKindName(uint32_t kind);

std::string FormatWindows(const std::vector<WindowCounts>& windows);
Expected<std::vector<WindowCounts>> ParseWindows(const std::string& text);
Status WriteWindowsFile(const std::vector<WindowCounts>& windows, const std::string& path);
Expected<std::vector<WindowCounts>> ReadWindowsFile(const std::string& path);

}  // namespace tprof

#endif  // TPROF_WINDOWS_H_
