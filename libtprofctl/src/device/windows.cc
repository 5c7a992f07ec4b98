#include "tprof/device/windows.h"

#include "device/ioctl_errors.h"

#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace tprof {

namespace {

Error WindowError(const char* what, unsigned long cmd, int err) {
  if (err == ENOTTY)
    return Error::FromErrno(err, std::string(what) + ": the loaded tprof module has no counting windows "
                                                     "(ABI < 1.3, ENOTTY)");
  return IoctlFailure(what, cmd, err);
}

template <typename T>
bool ParseU64(const std::string& s, T* v) {
  if (s.empty() || s[0] == '-') return false;
  try {
    size_t end = 0;
    *v = std::stoull(s, &end, 0);
    return end == s.size();
  } catch (...) {
    return false;
  }
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

Error SpecError(const std::string& spec, const char* form) {
  return Error::FromErrno(EINVAL, "bad window '" + spec + "': expected " + form);
}

}  // namespace

Expected<tprof_window_add> ParseWindowSpec(const std::string& spec) {
  constexpr char kForm[] = "kernel:START:LEN:BLOCK or pid=PID:START:LEN:BLOCK";
  std::vector<std::string> f = Split(spec, ':');
  tprof_window_add a{};
  uint64_t pid = 0, block = 0;
  if (f.size() != 4) return SpecError(spec, kForm);
  if (f[0] == "kernel") {
    a.kind = TPROF_WINDOW_KERNEL;
  } else if (f[0].rfind("pid=", 0) == 0 && ParseU64(f[0].substr(4), &pid) && pid <= UINT32_MAX) {
    a.kind = TPROF_WINDOW_PROCESS;
    a.pid = static_cast<uint32_t>(pid);
  } else {
    return SpecError(spec, kForm);
  }
  if (!ParseU64(f[1], &a.start) || !ParseU64(f[2], &a.length) || !ParseU64(f[3], &block) ||
      block > UINT32_MAX)
    return SpecError(spec, kForm);
  a.block_bytes = static_cast<uint32_t>(block);
  return a;
}

Expected<tprof_window_add> ParseProfilSpec(const std::string& spec) {
  constexpr char kForm[] = "PID:OFFSET:SCALE:BUFSIZ[:32]";
  std::vector<std::string> f = Split(spec, ':');
  tprof_window_add a{};
  uint64_t pid = 0, scale = 0;
  if (f.size() != 4 && !(f.size() == 5 && f[4] == "32")) return SpecError(spec, kForm);
  if (!ParseU64(f[0], &pid) || pid > UINT32_MAX || !ParseU64(f[1], &a.start) ||
      !ParseU64(f[2], &scale) || scale > UINT32_MAX || !ParseU64(f[3], &a.length))
    return SpecError(spec, kForm);
  a.kind = TPROF_WINDOW_PROFIL;
  a.pid = static_cast<uint32_t>(pid);
  a.scale = static_cast<uint32_t>(scale);
  if (f.size() == 5) a.flags = TPROF_WINDOW_CELLS32;
  return a;
}

Expected<tprof_window_add> AddWindow(int fd, const tprof_window_add& spec) {
  tprof_window_add a = spec;
  if (::ioctl(fd, TPROF_IOC_WINDOW_ADD, &a) != 0) return WindowError("adding a window", TPROF_IOC_WINDOW_ADD, errno);
  return a;
}

Expected<std::vector<tprof_window_info>> ListWindows(int fd) {
  std::vector<tprof_window_info> out(TPROF_MAX_WINDOWS);
  tprof_window_list l{};
  l.windows = reinterpret_cast<uintptr_t>(out.data());
  l.capacity = static_cast<uint32_t>(out.size());
  if (::ioctl(fd, TPROF_IOC_WINDOW_LIST, &l) != 0) return WindowError("listing windows", TPROF_IOC_WINDOW_LIST, errno);
  out.resize(std::min<size_t>(l.count, out.size()));
  return out;
}

Expected<WindowCounts> ReadWindow(int fd, uint32_t id) {
  tprof_window_read r{};
  r.id = id;
  if (::ioctl(fd, TPROF_IOC_WINDOW_READ, &r) != 0) return WindowError("reading a window", TPROF_IOC_WINDOW_READ, errno);
  std::vector<uint8_t> raw(r.info.nr_cells * r.info.cell_bytes);
  r.cells = reinterpret_cast<uintptr_t>(raw.data());
  r.capacity = r.info.nr_cells;
  if (::ioctl(fd, TPROF_IOC_WINDOW_READ, &r) != 0) return WindowError("reading a window", TPROF_IOC_WINDOW_READ, errno);
  WindowCounts w;
  w.info = r.info;
  w.cells.resize(r.copied);
  for (uint64_t i = 0; i < r.copied; ++i) {
    if (r.info.cell_bytes == 2) {
      uint16_t v;
      std::memcpy(&v, &raw[i * 2], 2);
      w.cells[i] = v;
    } else {
      std::memcpy(&w.cells[i], &raw[i * 4], 4);
    }
  }
  return w;
}

Expected<std::vector<WindowCounts>> ReadWindows(int fd) {
  auto list = ListWindows(fd);
  if (!list) return list.error();
  std::vector<WindowCounts> out;
  for (const tprof_window_info& i : *list) {
    auto w = ReadWindow(fd, i.id);
    if (!w) return w.error();
    out.push_back(std::move(*w));
  }
  return out;
}

bool WindowCellAddress(const tprof_window_info& info, uint64_t cell, uint64_t* addr) {
  if (info.kind != TPROF_WINDOW_PROFIL) {
    *addr = info.start + cell * info.block_bytes;
    return true;
  }
  if (info.scale < 2 || info.scale > TPROF_PROFIL_MAX_SCALE) return false;
  uint64_t i16 = info.cell_bytes == 4 ? cell * 2 : cell;
  if (info.scale == 2) {
    *addr = info.start;
    return i16 == 0;
  }
  // The smallest d = (pc - offset) / 2 with d * scale / 65536 >= i16.
  unsigned __int128 q = static_cast<unsigned __int128>(i16) << 16;
  unsigned __int128 d = (q + info.scale - 1) / info.scale;
  *addr = static_cast<uint64_t>(info.start + 2 * d);
  return true;
}

const char* WindowKindName(uint32_t kind) {
  switch (kind) {
    case TPROF_WINDOW_KERNEL:
      return "kernel";
    case TPROF_WINDOW_PROCESS:
      return "process";
    case TPROF_WINDOW_PROFIL:
      return "profil";
    default:
      return "unknown";
  }
}

bool WindowCounts::operator==(const WindowCounts& o) const {
  return std::memcmp(&info, &o.info, sizeof(info)) == 0 && cells == o.cells;
}

Status AddWindows(int fd, const std::vector<tprof_window_add>& windows, pid_t command) {
  for (tprof_window_add w : windows) {
    if (w.kind == TPROF_WINDOW_PROFIL && w.pid == 0 && command > 0)
      return Error::FromErrno(EINVAL, "a profil window of pid 0 cannot follow the recorded "
                                      "command: exec turns profil off; use a process window "
                                      "of pid 0 instead");
    if (w.kind != TPROF_WINDOW_KERNEL && w.pid == 0 && command > 0)
      w.pid = static_cast<uint32_t>(command);
    if (auto r = AddWindow(fd, w); !r) return r.error();
  }
  return OkStatus();
}

std::string FormatWindows(const std::vector<WindowCounts>& windows) {
  std::ostringstream o;
  o << "tprof-windows 1\n";
  for (const WindowCounts& w : windows) {
    const tprof_window_info& i = w.info;
    o << "window id=" << i.id << " kind=" << WindowKindName(i.kind) << " pid=" << i.pid
      << " start=0x" << std::hex << i.start << std::dec << " length=" << i.length
      << " block=" << i.block_bytes << " scale=" << i.scale << " flags=" << i.flags
      << " cells=" << i.nr_cells << " cell_bytes=" << i.cell_bytes << " in_range=" << i.in_range
      << " out_of_range=" << i.out_of_range << " wait=" << i.wait
      << " untracked_forks=" << i.untracked_forks << " procs=" << i.nr_procs << "\n";
    for (size_t c = 0; c < w.cells.size(); ++c)
      if (w.cells[c]) o << "c " << c << " " << w.cells[c] << "\n";
  }
  return o.str();
}

Expected<std::vector<WindowCounts>> ParseWindows(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::vector<WindowCounts> out;
  auto bad = [&](const std::string& why) {
    return Error::FromErrno(EINVAL, "malformed windows file: " + why + ": '" + line + "'");
  };
  if (!std::getline(in, line) || line != "tprof-windows 1") return bad("no header");
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream l(line);
    std::string tag;
    l >> tag;
    if (tag == "window") {
      std::map<std::string, std::string> kv;
      std::string field;
      while (l >> field) {
        size_t eq = field.find('=');
        if (eq == std::string::npos) return bad("field without '='");
        kv[field.substr(0, eq)] = field.substr(eq + 1);
      }
      WindowCounts w;
      tprof_window_info& i = w.info;
      uint64_t v = 0;
      auto num = [&](const char* key, auto* dst) {
        auto it = kv.find(key);
        return it != kv.end() && ParseU64(it->second, dst);
      };
      const std::string kind = kv["kind"];
      i.kind = kind == "kernel" ? TPROF_WINDOW_KERNEL
               : kind == "process" ? TPROF_WINDOW_PROCESS
               : kind == "profil"  ? TPROF_WINDOW_PROFIL
                                   : 0;
      if (!i.kind) return bad("unknown kind");
      bool ok = num("id", &v) && (i.id = static_cast<uint32_t>(v), true) && num("pid", &v) &&
                (i.pid = static_cast<uint32_t>(v), true) && num("start", &i.start) &&
                num("length", &i.length) && num("block", &v) &&
                (i.block_bytes = static_cast<uint32_t>(v), true) && num("scale", &v) &&
                (i.scale = static_cast<uint32_t>(v), true) && num("flags", &v) &&
                (i.flags = static_cast<uint32_t>(v), true) && num("cells", &i.nr_cells) &&
                num("cell_bytes", &v) && (i.cell_bytes = static_cast<uint32_t>(v), true) &&
                num("in_range", &i.in_range) && num("out_of_range", &i.out_of_range) &&
                num("wait", &i.wait) && num("untracked_forks", &i.untracked_forks) &&
                num("procs", &v) && (i.nr_procs = static_cast<uint32_t>(v), true);
      if (!ok || i.nr_cells > TPROF_WINDOW_MAX_CELLS) return bad("bad window fields");
      w.cells.assign(i.nr_cells, 0);
      out.push_back(std::move(w));
    } else if (tag == "c") {
      uint64_t idx = 0, count = 0;
      if (out.empty() || !(l >> idx >> count) || idx >= out.back().cells.size() ||
          count > UINT32_MAX)
        return bad("bad cell");
      out.back().cells[idx] = static_cast<uint32_t>(count);
    } else {
      return bad("unknown line");
    }
  }
  return out;
}

Status WriteWindowsFile(const std::vector<WindowCounts>& windows, const std::string& path) {
  std::ofstream f(path, std::ios::trunc);
  if (!f) return Error::FromErrno(errno ? errno : EIO, "cannot write " + path);
  f << FormatWindows(windows);
  f.close();
  if (!f) return Error::FromErrno(EIO, "cannot write " + path);
  return OkStatus();
}

Expected<std::vector<WindowCounts>> ReadWindowsFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Error::FromErrno(errno ? errno : ENOENT, "cannot read " + path);
  std::ostringstream s;
  s << f.rdbuf();
  auto w = ParseWindows(s.str());
  if (!w) return Error(w.error().code(), path + ": " + w.error().message());
  return w;
}

}  // namespace tprof
