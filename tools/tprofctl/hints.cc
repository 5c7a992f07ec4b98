#include "hints.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <sys/wait.h>

#include <cerrno>
#include <climits>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include <linux/tprof.h>

#include "tprof/analysis/archive.h"
#include "tprof/analysis/elf_snapshot.h"

namespace tprof::cli {

namespace {

std::string KernelRelease() {
  utsname u{};
  return ::uname(&u) == 0 ? u.release : "$(uname -r)";
}

std::string LoadModule() {
  return "load the module: `sudo insmod " + ModuleFileHint() +
         "` (`make module` builds it), or `sudo modprobe tprof` if it was installed with "
         "`make dkms-install`";
}

bool Missing(int err) { return err == ENOENT || err == ENODEV || err == ENXIO; }

}  // namespace

// arm64: a uprobe and a debug-register breakpoint of tprof's at one address.
std::string BreakpointBusyHint() {
  return "on arm64 another PMU program has a breakpoint of the other kind at that address (a "
         "uprobe vs. a debug register, which together would kill the task with SIGILL): close "
         "it, or put this breakpoint elsewhere";
}

std::string ModuleFileHint() {
  const std::string rel = "build/kmod/" + KernelRelease() + "/kmod/tprof.ko";
  char exe[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    std::string path(exe, static_cast<size_t>(n));
    // BUILD/bin/tprofctl -> BUILD/kmod/RELEASE/kmod/tprof.ko
    const std::string suffix = "/bin/tprofctl";
    if (path.size() > suffix.size() &&
        path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
      std::string ko = path.substr(0, path.size() - suffix.size()) + "/kmod/" + KernelRelease() +
                       "/kmod/tprof.ko";
      if (::access(ko.c_str(), R_OK) == 0) return ko;
    }
  }
  return rel;
}

std::string Hint(const Error& error, Doing doing) {
  const int err = error.code().category() == std::system_category() ? error.code().value() : 0;
  if (err == ENOTTY && doing != Doing::kReadProfile)
    return "the loaded tprof module is older than this tprofctl (ABI " +
           std::to_string(TPROF_ABI_MAJOR) + "." + std::to_string(TPROF_ABI_MINOR) +
           "): `sudo rmmod tprof`, then " + LoadModule();
  switch (doing) {
    case Doing::kOpenDevice:
    case Doing::kMetrics:
    case Doing::kThreads:
    case Doing::kSampling:
    case Doing::kAllCpus:
      if (Missing(err)) return LoadModule();
      break;
    case Doing::kPmuProgram:
    case Doing::kPmuAllCpus:
      if (Missing(err)) return LoadModule() + " (PMU programs need ABI 1.7 or later)";
      break;
    default:
      break;
  }
  switch (doing) {
    case Doing::kSampling:
    case Doing::kAllCpus:
      if (err == EPERM && doing == Doing::kAllCpus)
        return "sampling every process needs CAP_PERFMON or CAP_SYS_ADMIN: run as root, or "
               "profile your own command (`tprofctl record -- CMD`) or process (-p PID)";
      if (err == EPERM)
        return "the sample buffers exceed your locked-memory allowance: use a smaller "
               "--buffer-kb, raise `ulimit -l`, or the module parameter sampling_mlock_kb";
      if (err == EACCES)
        return "another user's process needs CAP_PERFMON; your own need "
               "kernel.perf_event_paranoid <= 2 (`sudo sysctl kernel.perf_event_paranoid=2`: "
               "user mode; 1: also kernel mode)";
      if (err == EBUSY)
        return "one session runs at a time: a `tprofctl start` recorder ends with `tprofctl "
               "stop`; `sudo tprofctl stop --force` stops anyone's";
      if (err == EOPNOTSUPP)
        return "sample on the clock (the default) or a software event (-e page-faults, "
               "context-switches, cpu-migrations, task-clock)";
      break;
    case Doing::kMetrics:
    case Doing::kThreads:
      if (err == ENODATA)
        return "turn per-thread metrics on with `tprofctl metrics on` (or load the module "
               "with metrics=time,dispatches)";
      if (err == EPERM && doing == Doing::kThreads)
        return "every process's threads need CAP_PERFMON: run as root, or --pid PID for "
               "one of your own";
      if (err == EPERM) return "needs CAP_PERFMON or CAP_SYS_ADMIN: run as root";
      if (err == EOPNOTSUPP)
        return "use time, dispatches or software events (`tprofctl metrics --help`)";
      break;
    case Doing::kReadProfile:
      if (err == ENOENT)
        return "record a profile first: `tprofctl record -- CMD`, or `tprofctl start` ... "
               "`tprofctl stop`";
      if (err == EPROTO || err == EBADMSG)
        return "give a file written by `tprofctl stop` or `tprofctl record` (of this version)";
      if (err == ENODATA)
        return "record it again with this tprofctl (and --time-granularity above 0) to select "
               "samples by --tid, --cpu or --time; --comm works on any profile";
      break;
    case Doing::kPmuSpec:
      if (err == ENOENT) return "`tprofctl pmu list` shows the events";
      break;
    case Doing::kPmuProgram:
      if (err == EACCES)
        return "see `sysctl kernel.perf_event_paranoid` (2 allows your own processes) or run "
               "with CAP_PERFMON";
      if (err == EPERM)
        return "breakpoints and watchpoints at kernel addresses need CAP_SYS_ADMIN (root), "
               "as perf's";
      if (err == EBUSY) return BreakpointBusyHint();
      if (err == EDQUOT)
        return "your user's PMU programs already hold pmu_user_events perf events (threads x "
               "events each): end some, or raise /sys/module/tprof/parameters/pmu_user_events "
               "as root";
      break;
    case Doing::kPmuAllCpus:
      if (err == EPERM)
        return "counting on every CPU (-a) sees every process: it needs CAP_PERFMON (or "
               "root), and breakpoints or watchpoints at kernel addresses CAP_SYS_ADMIN; "
               "without them count one process (-p), one thread (pmu watch --tid) or a "
               "command (-- CMD)";
      if (err == EBUSY) return BreakpointBusyHint();
      break;
    default:
      break;
  }
  return "";
}

namespace {

// A file the system's packages install (/usr/local is the user's own).
bool SystemFile(const std::string& path) {
  if (path.rfind("/usr/local/", 0) == 0) return false;
  for (const char* dir : {"/usr/", "/lib/", "/lib64/", "/lib32/", "/bin/", "/sbin/"})
    if (path.rfind(dir, 0) == 0) return true;
  return false;
}

// One of glibc's own libraries (Debian's libc6 package).
bool GlibcFile(const std::string& path) {
  const std::string base = path.substr(path.rfind('/') + 1);
  for (const char* lib : {"libc.so", "ld-linux", "libm.so", "libpthread.so", "libdl.so",
                          "librt.so", "libresolv.so", "libmvec.so"})
    if (base.rfind(lib, 0) == 0) return true;
  return false;
}

}  // namespace

std::string DebugSymbolsHint(const std::vector<UnresolvedObject>& objects, size_t limit,
                             const std::function<bool(const std::string&)>& has_package) {
  std::string out;
  bool packaged = false;
  for (size_t i = 0; i < objects.size() && i < limit; ++i) {
    const UnresolvedObject& o = objects[i];
    out += "tprofctl: " + std::to_string(o.samples) + " samples in " + o.path +
           " have no function name (rows \"" + o.path.substr(o.path.rfind('/') + 1) + "+0x...\"): ";
    if (!o.package.empty()) {
      packaged = true;
      // Debian's old-style -dbg packages (a few remain) come first when they exist.
      std::string dbg = o.package + "-dbg";
      std::string pkg = has_package(dbg) ? dbg : o.package + "-dbgsym";
      out += "install its debug symbols: `sudo apt install " + pkg + "`\n";
    } else if (SystemFile(o.path)) {
      // Not the user's to rebuild: a system library whose package is
      // unknown here (no dpkg database, another distribution).
      out += "install the debug symbols of the package that holds it (on Debian `dpkg -S " +
             o.path + "` names it: install its -dbgsym" +
             (GlibcFile(o.path) ? "; glibc's are `libc6-dbg`" : "") + ")\n";
    } else {
      out += "build it with -g, or keep its debug file (objcopy --only-keep-debug) next to it "
             "(.gnu_debuglink) or in /usr/lib/debug/.build-id/\n";
    }
  }
  if (packaged)
    out += "tprofctl: -dbgsym packages come from the debian-debug archive (`deb "
           "http://deb.debian.org/debian-debug <release>-debug main` in /etc/apt/sources.list); "
           "or let tprofctl fetch them: DEBUGINFOD_URLS=https://debuginfod.debian.net\n";
  return out;
}

bool AptHasPackage(const std::string& name) {
  for (char c : name)  // package names only: nothing for the shell to read
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '+' && c != '.')
      return false;
  std::string cmd = "apt-cache show --no-all-versions " + name + " >/dev/null 2>&1";
  int st = std::system(cmd.c_str());
  return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

std::string RebuiltFilesWarning(const Profile& profile, const std::string& symfs,
                                const std::string& only) {
  std::string out;
  for (const RebuiltFile& f : RebuiltFiles(profile)) {
    if (!only.empty() && f.path != only) continue;
    if (!symfs.empty() && ::access(SymfsPath(symfs, f.recorded_build_id).c_str(), R_OK) == 0)
      continue;  // the archive has the recorded build
    out += "tprofctl: warning: " + f.path + " " +
           (f.current_build_id.empty() ? "is gone or unreadable since the recording"
                                       : "was rebuilt after the recording") +
           ": its symbols may be wrong (build id " + f.recorded_build_id + " when recorded, " +
           (f.current_build_id.empty() ? "none" : f.current_build_id) + " now)\n";
  }
  return out;
}

}  // namespace tprof::cli
