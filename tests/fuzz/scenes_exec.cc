// Scenes of tprof_fuzz (tests/fuzz/tprof_fuzz.cc) about credentials: a
// setuid-root helper exec'd while the fuzzer attaches to it, and attaches
// from inside a user namespace of one's own. They use the core through
// fuzz.h.
//
//   - The setup (as root, before the halves split): /usr/bin/tprof-wl-child
//     copied to /tmp/tfz-suid-helper, root-owned, mode 4755; unprivileged
//     user namespaces enabled (kernel.unprivileged_userns_clone,
//     user.max_user_namespaces); tracefs mounted and the ids of a few
//     syscall tracepoints read (the unprivileged half cannot read them).
//   - OpExecRace (both halves): a forked child (as uid 65534: in the root
//     half it drops to it) calls a marker function and getppid() a few
//     times, sleeps a random moment and execs the helper, which is then
//     root and not dumpable; meanwhile the worker attaches to it every way
//     it knows, before and after its exec: PMU programs (THREAD and
//     PROCESS, random counters among syscall tracepoints the child never
//     enters before its exec (brk, mmap, openat, exit_group), getppid, a
//     breakpoint at the marker or at wl_child_work in this process's own
//     executable mapping of the helper's file (inherited by the child:
//     arm64 makes it a uprobe of that file for a CAP_PERFMON caller),
//     software events), a sampling session on
//     its pid (perf clock or scheduler tick; records, or counted in the
//     module) with a process window, THREAD_READ of its tid in a loop.
//     Checked: the helper exits 0 (a signal, SIGTRAP/SIGILL/SIGSEGV above
//     all, or an exec failure is a violation); each attach ends in success
//     or a documented errno (EACCES, ESRCH and EINTR are legal outcomes of
//     the race, counted). No PMU program of the unprivileged worker, nor
//     one root created before the child was let go, counts a syscall of
//     the helper, a hit in the helper's file or more marker hits than the
//     child made. Unprivileged: no successful
//     THREAD_READ names the helper (its comm); the session has no COMM
//     exec record and no user-mode sample (record or count) of the pid
//     outside this process's executable mappings (the child before its exec runs only
//     code mapped here), and a process window counted no more samples of
//     it than the records hold (when nothing was lost).
//   - OpUserNamespace (unprivileged half): a forked child unshares a user
//     namespace (uid and gid maps 0 -> 65534: all capabilities there) and
//     attaches (PMU_CREATE THREAD/PROCESS, SAMPLING_START, THREAD_READ,
//     DRAIN, WINDOW_ADD on a session of its own) to processes outside it,
//     the "capable stranger" (uid 65534 like the workers, with
//     CAP_NET_BIND_SERVICE permitted, started by --unprivileged's root
//     parent) and the worker that forked it, and to its own: itself and a
//     process it forked inside. Outside: EACCES is the only legal refusal
//     (ENODATA/EPERM for a window when its session ended, ESRCH for a target
//     that is gone), success a violation: capabilities in a namespace of
//     one's own are nothing over a process outside it, and perf's
//     capability-subset rule holds only inside one namespace. Inside: as
//     without a namespace (success, or what kernel.perf_event_paranoid,
//     a busy session or accounting being off explain). The worker itself
//     tries the stranger too (EACCES: its capability is not the worker's).
#include "fuzz.h"
#include "rng.h"

#include <elf.h>
#include <linux/capability.h>
#include <linux/tprof.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace tprof_fuzz {
namespace {

using u64 = unsigned long long;

constexpr uint32_t kNobody = 65534;
constexpr const char* kHelperPath = "/tmp/tfz-suid-helper";
constexpr const char* kHelperComm = "tfz-suid-helper";  // its comm after exec (15 bytes)
constexpr const char* kHelperSource = "/usr/bin/tprof-wl-child";

bool g_helper_ok = false;
pid_t g_capable_stranger = -1;

// Syscall tracepoints: the child before its exec enters getppid (and
// nanosleep, execve), never the others; the helper enters those.
struct Tracepoint {
  const char* name;
  bool helper_only;
  int id = -1;
};
Tracepoint g_tps[] = {{"sys_enter_brk", true}, {"sys_enter_mmap", true}, {"sys_enter_openat", true},
                      {"sys_enter_exit_group", true}, {"sys_enter_getppid", false}};
constexpr size_t kNrTps = sizeof(g_tps) / sizeof(g_tps[0]);
constexpr size_t kGetppid = kNrTps - 1;

bool WriteFile(const char* path, const char* s) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, s, std::strlen(s)) == ssize_t(std::strlen(s));
  ::close(fd);
  return ok;
}
long ReadLong(const char* path) {
  long v = -1;
  if (FILE* f = std::fopen(path, "r")) {
    if (std::fscanf(f, "%ld", &v) != 1) v = -1;
    std::fclose(f);
  }
  return v;
}

bool CopyHelper() {
  int in = ::open(kHelperSource, O_RDONLY | O_CLOEXEC);
  if (in < 0) return false;
  std::string tmp = std::string(kHelperPath) + ".new";
  ::mkdir("/tmp", 01777);
  int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
  bool ok = out >= 0;
  char buf[65536];
  ssize_t n;
  while (ok && (n = ::read(in, buf, sizeof(buf))) > 0) ok = ::write(out, buf, size_t(n)) == n;
  ::close(in);
  if (out >= 0) {
    ok = ok && ::fchown(out, 0, 0) == 0 && ::fchmod(out, 04755) == 0;
    ::close(out);
  }
  return ok && ::rename(tmp.c_str(), kHelperPath) == 0;
}

// Whether user address `ip` is in an executable mapping of this process
// (read once: the fuzzer maps no code later). The exec-race child runs
// only such code before its exec.
bool InOwnCode(u64 ip) {
  static const std::vector<std::pair<u64, u64>> ranges = [] {
    std::vector<std::pair<u64, u64>> v;
    if (FILE* f = std::fopen("/proc/self/maps", "r")) {
      char line[512];
      while (std::fgets(line, sizeof(line), f)) {
        u64 a = 0, b = 0;
        char perms[8] = {};
        if (std::sscanf(line, "%llx-%llx %7s", &a, &b, perms) == 3 && perms[2] == 'x') v.emplace_back(a, b);
      }
      std::fclose(f);
    }
    return v;
  }();
  for (const auto& [a, b] : ranges)
    if (ip >= a && ip < b) return true;
  return false;
}

bool In(int e, std::initializer_list<int> l) {
  for (int x : l)
    if (x == e) return true;
  return false;
}

int Ioctl(int fd, unsigned long cmd, void* arg) { return ::ioctl(fd, cmd, arg) == 0 ? 0 : errno; }

void SleepUs(u64 us) {
  timespec ts{time_t(us / 1000000), long(us % 1000000) * 1000};
  while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// The helper's file mapped executable into this process (before any
// exec-race fork: the children inherit it), and where its wl_child_work
// is in that mapping: 0 if the file has no such symbol. A breakpoint
// there is, in the child, at an instruction of a file mapping (arm64: a
// uprobe for a CAP_PERFMON caller) that the child never runs and the
// helper, a root process after its exec, runs once.
u64 HelperWorkInMapping() {
  static const u64 addr = []() -> u64 {
    int fd = ::open(kHelperPath, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || st.st_size < off_t(sizeof(Elf64_Ehdr))) {
      ::close(fd);
      return 0;
    }
    const size_t len = size_t(st.st_size);
    void* m = ::mmap(nullptr, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED) return 0;
    const char* b = static_cast<const char*>(m);
    auto* eh = reinterpret_cast<const Elf64_Ehdr*>(b);
    if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff + u64(eh->e_shnum) * sizeof(Elf64_Shdr) > len || eh->e_phoff + u64(eh->e_phnum) * sizeof(Elf64_Phdr) > len)
      return 0;
    auto* sh = reinterpret_cast<const Elf64_Shdr*>(b + eh->e_shoff);
    u64 value = 0;
    for (unsigned i = 0; i < eh->e_shnum && !value; ++i) {
      if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) continue;
      const Elf64_Shdr& strs = sh[sh[i].sh_link];
      if (sh[i].sh_offset + sh[i].sh_size > len || strs.sh_offset + strs.sh_size > len) continue;
      auto* sym = reinterpret_cast<const Elf64_Sym*>(b + sh[i].sh_offset);
      for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); ++k)
        if (ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC && sym[k].st_name < strs.sh_size &&
            std::strncmp(b + strs.sh_offset + sym[k].st_name, "wl_child_work", strs.sh_size - sym[k].st_name) == 0) {
          value = sym[k].st_value;
          break;
        }
    }
    auto* ph = reinterpret_cast<const Elf64_Phdr*>(b + eh->e_phoff);
    for (unsigned i = 0; i < eh->e_phnum && value; ++i)
      if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) && value >= ph[i].p_vaddr &&
          value < ph[i].p_vaddr + ph[i].p_filesz && value - ph[i].p_vaddr + ph[i].p_offset < len)
        return u64(reinterpret_cast<uintptr_t>(b)) + value - ph[i].p_vaddr + ph[i].p_offset;
    return 0;  // (the mapping stays: nothing to gain from unmapping it)
  }();
  return addr;
}

}  // namespace

// The exec-race child calls this before its exec (a breakpoint target).
extern "C" __attribute__((noinline)) void tprof_fuzz_exec_race_mark(int i) { asm volatile("" ::"r"(i) : "memory"); }

// ---- setup (root) ------------------------------------------------------------------

void ExecScenesSetUpAsRoot() {
  if (::geteuid() != 0) return;
  g_helper_ok = CopyHelper();
  std::printf("tprof_fuzz: setuid helper %s (copy of %s, root 4755): %s\n", kHelperPath, kHelperSource,
              g_helper_ok ? "ready" : std::strerror(errno));
  // Debian's kernels: kernel.unprivileged_userns_clone; mainline's knob
  // is user.max_user_namespaces (0 disables).
  if (::access("/proc/sys/kernel/unprivileged_userns_clone", F_OK) == 0)
    (void)WriteFile("/proc/sys/kernel/unprivileged_userns_clone", "1");
  if (ReadLong("/proc/sys/user/max_user_namespaces") == 0)
    (void)WriteFile("/proc/sys/user/max_user_namespaces", "1000");
  struct stat st {};
  if (::stat("/sys/kernel/tracing/events", &st) != 0)
    (void)::mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr);
  std::string have;
  for (Tracepoint& t : g_tps) {
    std::string p = std::string("/sys/kernel/tracing/events/syscalls/") + t.name + "/id";
    t.id = int(ReadLong(p.c_str()));
    if (t.id >= 0) have += std::string(have.empty() ? "" : ",") + t.name;
  }
  std::printf("tprof_fuzz: syscall tracepoints for the exec race: %s\n", have.empty() ? "none" : have.c_str());
  std::fflush(stdout);
}

void ExecScenesStartCapableStranger() {
  if (::geteuid() != 0) return;
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return;
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    char ok = 0;
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    data[0].permitted = data[0].effective = 1U << CAP_NET_BIND_SERVICE;
    if (::prctl(PR_SET_KEEPCAPS, 1) == 0 && ::syscall(SYS_setgroups, 0, nullptr) == 0 &&
        ::syscall(SYS_setresgid, kNobody, kNobody, kNobody) == 0 &&
        ::syscall(SYS_setresuid, kNobody, kNobody, kNobody) == 0 && ::syscall(SYS_capset, &hdr, data) == 0 &&
        ::prctl(PR_SET_DUMPABLE, 1) == 0 && ::prctl(PR_SET_PDEATHSIG, SIGKILL) == 0)  // (cleared by setresuid)
      ok = 1;
    (void)!::write(p[1], &ok, 1);
    // Nothing of the root parent's (its /dev/tprof descriptor) stays open.
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
    for (;;) {
      ::syscall(SYS_getppid);
      SleepUs(10000);
    }
  }
  ::close(p[1]);
  char ok = 0;
  if (pid > 0 && ::read(p[0], &ok, 1) == 1 && ok) {
    g_capable_stranger = pid;
    std::printf("tprof_fuzz: capable stranger: pid %d, uid/gid %u, CapPrm cap_net_bind_service\n", int(pid), kNobody);
  } else {
    std::printf("tprof_fuzz: no capable stranger (setup failed)\n");
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  std::fflush(stdout);
  ::close(p[0]);
}

void ExecScenesStopCapableStranger() {
  if (g_capable_stranger <= 0) return;
  ::kill(g_capable_stranger, SIGKILL);
  ::waitpid(g_capable_stranger, nullptr, 0);
  g_capable_stranger = -1;
}

// ---- the exec race ------------------------------------------------------------------

namespace {

struct RaceProgram {
  int fd = -1;
  uint32_t scope = 0;
  bool after_exec_started = false;  // created after the child was let go
  std::vector<std::pair<int, std::string>> counters;  // tracepoint index (or -1 marker, -2 other), name
};

struct RaceSession {
  int fd = -1;
  char* map = nullptr;
  tprof_sampling_config cfg{};
  int window = -1;
};

// PMU_CREATE on the child, THREAD or PROCESS, 1-4 random counters.
void RaceCreateProgram(Rng& r, int dev, pid_t child, bool after, std::vector<RaceProgram>& progs) {
  tprof_pmu_program p{};
  RaceProgram rp;
  rp.after_exec_started = after;
  p.scope = r.OneIn(2) ? TPROF_PMU_SCOPE_THREAD : TPROF_PMU_SCOPE_PROCESS;
  p.pid = uint32_t(child);
  const uint32_t n = 1 + uint32_t(r.Below(4));
  bool have_bp = false;
  for (uint32_t i = 0; i < n; ++i) {
    tprof_pmu_counter& k = p.counters[p.nr_counters];
    switch (r.Below(6)) {
      case 0:
      case 1:
      case 2: {
        size_t t = r.Below(kNrTps);
        if (g_tps[t].id < 0) continue;
        k.kind = TPROF_PMU_EV_TRACEPOINT;
        k.config = u64(g_tps[t].id);
        rp.counters.emplace_back(int(t), g_tps[t].name);
        break;
      }
      case 3:
        if (have_bp) continue;
        have_bp = true;
        k.kind = TPROF_PMU_EV_BREAKPOINT;
        if (HelperWorkInMapping() && r.OneIn(2)) {
          k.addr = HelperWorkInMapping();
          rp.counters.emplace_back(-3, "breakpoint in the helper's file");
        } else {
          k.addr = u64(reinterpret_cast<uintptr_t>(&tprof_fuzz_exec_race_mark));
          rp.counters.emplace_back(-1, "marker breakpoint");
        }
        if (r.OneIn(2)) k.threshold = 1 + r.Below(3);  // seen per hit (arm64: with a stepper)
        break;
      default:
        k.kind = TPROF_PMU_EV_SOFTWARE;
        k.config = r.OneIn(2) ? 2 : 3;  // PERF_COUNT_SW_PAGE_FAULTS, _CONTEXT_SWITCHES
        rp.counters.emplace_back(-2, k.config == 2 ? "page-faults" : "context-switches");
        break;
    }
    p.nr_counters++;
  }
  if (p.nr_counters == 0) return;
  int err = Ioctl(dev, TPROF_IOC_PMU_CREATE, &p);
  CountStat(std::string("exec race: PMU_CREATE ") + (p.scope == TPROF_PMU_SCOPE_THREAD ? "thread " : "process ") +
            (after ? "after go " : "before go ") + ErrnoName(err));
  if (err == 0) {
    rp.fd = p.fd;
    rp.scope = p.scope;
    progs.push_back(std::move(rp));
    return;
  }
  // EACCES: the helper is already root (or paranoid 3); ESRCH: gone;
  // ENOSPC/EBUSY: debug registers (arm64: uprobes vs. registers) taken.
  if (!In(err, {EACCES, ESRCH, EINTR, ENOSPC, EBUSY, ENOENT, EOPNOTSUPP, E2BIG, ENOMEM, EMFILE}))
    ReportViolationf("PMU_CREATE (%s) on the exec-race child %d: %s (not in PMU_CREATE's documented set)",
                    p.scope == TPROF_PMU_SCOPE_THREAD ? "THREAD" : "PROCESS", int(child), ErrnoName(err).c_str());
}

void RaceStartSession(Rng& r, pid_t child, bool after, RaceSession& s) {
  s.fd = OpenTprof();
  if (s.fd < 0) return;
  s.cfg = {};  // a start that failed before may have left another way
  s.cfg.pid = uint32_t(child);
  s.cfg.frequency_hz = uint32_t(1000 + r.Below(9000));
  if (r.OneIn(3)) {  // in the scheduler tick (ABI 1.21): at HZ
    s.cfg.frequency_hz = 0;
    s.cfg.event_type = TPROF_SAMPLE_ON_TICK;
  }
  if (r.OneIn(3))  // counted in the module (ABI 1.21), maybe as records too
    s.cfg.flags = TPROF_SAMPLING_AGGREGATE | (r.OneIn(2) ? TPROF_SAMPLING_AGGREGATE_RECORDS : 0);
  int err = Ioctl(s.fd, TPROF_IOC_SAMPLING_START, &s.cfg);
  // One session at a time, and the other workers (and the root parent)
  // hold one often: before the child is let go, wait a little for it.
  for (int i = 0; i < 30 && err == EBUSY && !after; ++i) {
    SleepUs(5000 + r.Below(10000));
    err = Ioctl(s.fd, TPROF_IOC_SAMPLING_START, &s.cfg);
  }
  CountStat(std::string("exec race: SAMPLING_START ") + (after ? "after go " : "before go ") + ErrnoName(err));
  if (err) {
    if (!In(err, {EACCES, ESRCH, EINTR, EBUSY, ENOMEM, E2BIG, EOPNOTSUPP}))  // EOPNOTSUPP: no tick hook
      ReportViolationf("SAMPLING_START on the exec-race child %d: %s (not in its documented set)", int(child),
                      ErrnoName(err).c_str());
    ::close(s.fd);
    s.fd = -1;
    return;
  }
  void* m = ::mmap(nullptr, s.cfg.map_bytes, PROT_READ, MAP_SHARED, s.fd, 0);
  if (m != MAP_FAILED) s.map = static_cast<char*>(m);
  if (r.OneIn(3)) return;
  tprof_window_add wa{};
  wa.kind = TPROF_WINDOW_PROCESS;
  wa.pid = uint32_t(child);
  wa.start = 0;
  wa.length = 1ULL << 47;
  wa.block_bytes = 1U << 27;  // 2^20 cells
  err = Ioctl(s.fd, TPROF_IOC_WINDOW_ADD, &wa);
  CountStat(std::string("exec race: WINDOW_ADD ") + ErrnoName(err));
  if (err == 0) s.window = int(wa.id);
  else if (!In(err, {EACCES, ESRCH, EINTR, ENOMEM, ENOSPC}))
    ReportViolationf("WINDOW_ADD (process %d) on a session of its own: %s (not in its documented set)", int(child),
                    ErrnoName(err).c_str());
}

// One THREAD_READ of the child; unprivileged, a read that names the helper
// read a process that is root now.
void RaceThreadRead(int dev, pid_t child, bool unpriv, bool* named_helper) {
  tprof_thread_read tr{};
  tr.tid = uint32_t(child);
  tr.flags = TPROF_THREAD_READ_TOTALS;
  int err = Ioctl(dev, TPROF_IOC_THREAD_READ, &tr);
  if (err && !In(err, {EACCES, ESRCH, EINTR, ENODATA}))
    ReportViolationf("THREAD_READ of the exec-race child %d: %s (not in its documented set)", int(child),
                    ErrnoName(err).c_str());
  char comm[17] = {};
  std::memcpy(comm, tr.thread.comm, 16);
  const bool helper = err == 0 && std::strncmp(comm, kHelperComm, 15) == 0;
  CountStat(std::string("exec race: THREAD_READ ") + ErrnoName(err) + (helper ? " (the helper)" : ""));
  if (helper && unpriv && !*named_helper) {
    *named_helper = true;
    ReportViolationf("THREAD_READ of tid %d succeeded for the unprivileged worker after the thread exec'd the "
                    "setuid-root helper (comm \"%s\"): a non-dumpable root process is not readable",
                    int(child), comm);
  }
}

// A counting session's counts of the child (AGGREGATE_READ of every CPU):
// user-mode counts outside this process's code are the helper's. Returns
// the child's count.
u64 RaceCheckCounts(const RaceSession& s, pid_t child) {
  std::vector<tprof_aggregate_entry> entries(s.cfg.aggregate_slots);
  u64 foreign = 0, first_ip = 0, total = 0;
  for (uint32_t cpu = 0; cpu < s.cfg.nr_cpu_ids; ++cpu) {
    tprof_aggregate_read rd{};
    rd.cpu = cpu;
    rd.max_entries = uint32_t(entries.size());
    rd.entries = u64(uintptr_t(entries.data()));
    int err = Ioctl(s.fd, TPROF_IOC_SAMPLING_AGGREGATE_READ, &rd);
    if (err) {
      ReportViolationf("AGGREGATE_READ of cpu %u of the exec-race session: %s", cpu, ErrnoName(err).c_str());
      return total;
    }
    for (uint32_t i = 0; i < rd.nr_entries && i < entries.size(); ++i) {
      const tprof_aggregate_entry& e = entries[i];
      if (e.pid == uint32_t(child)) total += e.count;
      if (e.pid != uint32_t(child) || !(e.flags & TPROF_SAMPLE_USER) || InOwnCode(e.ip)) continue;
      if (!foreign) first_ip = e.ip;
      foreign += e.count;
    }
  }
  CountStat("exec race: counts checked");
  if (foreign)
    ReportViolationf("the unprivileged worker's counting session on pid %d counted %llu user-mode samples of it "
                    "outside the fuzzer's code (first ip 0x%llx): samples of the setuid-root helper it exec'd",
                    int(child), foreign, first_ip);
  return total;
}

// The session's records, after SAMPLING_STOP: samples and exec COMMs of
// the child. Only halves that were published (full) are read.
struct RaceRecords {
  u64 samples = 0;             // of the child, any mode
  u64 user_foreign_ip = 0;     // of the child, user mode, outside this process's code
  u64 first_foreign_ip = 0;
  u64 exec_comms = 0;
  char exec_comm[17] = {};
  bool malformed = false;
};

RaceRecords RaceParse(const RaceSession& s, pid_t child) {
  RaceRecords out;
  const tprof_sampling_config& c = s.cfg;
  for (uint32_t cpu = 0; cpu < c.nr_cpu_ids; ++cpu) {
    auto* ctl = reinterpret_cast<const tprof_buffer_ctl*>(s.map + size_t(cpu) * sizeof(tprof_buffer_ctl));
    for (int h = 0; h < 2; ++h) {
      if (!__atomic_load_n(&ctl->full[h], __ATOMIC_ACQUIRE)) continue;
      const uint32_t used = ctl->used[h];
      const char* base = s.map + c.ctl_bytes + (2 * u64(cpu) + u64(h)) * c.half_bytes_out;
      if (used > c.half_bytes_out) {
        out.malformed = true;
        continue;
      }
      for (uint32_t off = 0; off + sizeof(tprof_rec_header) <= used;) {
        auto* hd = reinterpret_cast<const tprof_rec_header*>(base + off);
        if (hd->size < sizeof(tprof_rec_header) || hd->size % 8 || off + hd->size > used) {
          out.malformed = true;
          break;
        }
        if (hd->type == TPROF_REC_SAMPLE && hd->size >= sizeof(tprof_rec_sample)) {
          auto* sm = reinterpret_cast<const tprof_rec_sample*>(hd);
          if (sm->pid == uint32_t(child)) {
            out.samples++;
            if ((sm->flags & TPROF_SAMPLE_USER) && !InOwnCode(sm->ip)) {
              if (!out.user_foreign_ip) out.first_foreign_ip = sm->ip;
              out.user_foreign_ip++;
            }
          }
        } else if (hd->type == TPROF_REC_COMM && hd->size >= sizeof(tprof_rec_comm)) {
          auto* cm = reinterpret_cast<const tprof_rec_comm*>(hd);
          if (cm->pid == uint32_t(child) && cm->kind == TPROF_COMM_EXEC) {
            out.exec_comms++;
            std::memcpy(out.exec_comm, cm->comm, 16);
          }
        }
        off += hd->size;
      }
    }
  }
  return out;
}

void RaceEndSession(RaceSession& s, pid_t child, bool unpriv) {
  if (s.fd < 0) return;
  (void)Ioctl(s.fd, TPROF_IOC_SAMPLING_STOP, nullptr);
  tprof_sampling_status st{};
  int serr = Ioctl(s.fd, TPROF_IOC_SAMPLING_STATUS, &st);
  tprof_window_read wr{};
  int werr = -1;
  if (s.window >= 0) {
    wr.id = uint32_t(s.window);
    werr = Ioctl(s.fd, TPROF_IOC_WINDOW_READ, &wr);
  }
  // Only the unprivileged half parses: the root half's CPU hotplug can
  // take away a CPU's halves.
  // Counted samples are the window's too (with AGGREGATE_RECORDS they are
  // also records).
  u64 counted_samples = 0;
  if (unpriv && (s.cfg.flags & TPROF_SAMPLING_AGGREGATE)) {
    counted_samples = RaceCheckCounts(s, child);
    if (s.cfg.flags & TPROF_SAMPLING_AGGREGATE_RECORDS) counted_samples = 0;
  }
  if (unpriv && s.map) {
    RaceRecords rec = RaceParse(s, child);
    rec.samples += counted_samples;
    CountStat("exec race: sessions parsed");
    if (rec.user_foreign_ip)
      ReportViolationf("the unprivileged worker's session on pid %d recorded %llu user-mode samples of it outside "
                      "the fuzzer's code (first ip 0x%llx): samples of the setuid-root helper it exec'd",
                      int(child), rec.user_foreign_ip, rec.first_foreign_ip);
    if (rec.exec_comms)
      ReportViolationf("the unprivileged worker's session on pid %d recorded its exec (COMM \"%s\") into the "
                      "setuid-root helper: the session must leave it at that exec",
                      int(child), rec.exec_comm);
    if (werr == 0 && serr == 0 && st.lost_samples == 0 && st.lost_records == 0 && !rec.malformed) {
      const u64 counted = wr.info.in_range + wr.info.out_of_range;
      if (counted > rec.samples)
        ReportViolationf("the process window on pid %d counted %llu samples of it, the session's records hold %llu "
                        "(every one before its exec into the setuid-root helper): the window followed the helper",
                        int(child), counted, rec.samples);
      else
        CountStat("exec race: windows checked");
    }
  }
  if (s.map) ::munmap(s.map, s.cfg.map_bytes);
  ::close(s.fd);
  s.fd = -1;
}

void RaceCheckProgram(const RaceProgram& p, pid_t child, int marks, bool unpriv) {
  tprof_pmu_values v{};
  int err = Ioctl(p.fd, TPROF_IOC_PMU_READ, &v);
  if (err) {
    ReportViolationf("PMU_READ of a program on the exec-race child %d: %s", int(child), ErrnoName(err).c_str());
    return;
  }
  for (size_t i = 0; i < p.counters.size() && i < TPROF_PMU_MAX_COUNTERS; ++i) {
    const int kind = p.counters[i].first;
    const u64 val = v.values[i];
    if (kind >= 0 && size_t(kind) == kGetppid && !p.after_exec_started)
      CountStat(std::string("exec race: getppid control ") + (val == u64(marks) ? "exact" : "not exact"));
    if (kind == -1 && !p.after_exec_started)
      CountStat(std::string("exec race: marker breakpoint control ") + (val == u64(marks) ? "exact" : "not exact"));
    if (kind == -3) CountStat(std::string("exec race: helper-file breakpoint read ") + (val ? "hits" : "none"));
    // Root may attach to the helper after its exec (and count it); a
    // program root created before the child was let go, or any program
    // of the unprivileged worker, must not follow the child into it.
    if (!unpriv && p.after_exec_started) continue;
    const char* who = unpriv ? "of the unprivileged worker" : "root created before the child could exec";
    if (kind >= 0 && g_tps[kind].helper_only && val != 0)
      ReportViolationf("a PMU program (%s) %s on pid %d counted %llu %s, a syscall only the setuid-root helper it "
                      "exec'd makes: the program followed it into a non-dumpable root process",
                      p.scope == TPROF_PMU_SCOPE_THREAD ? "THREAD" : "PROCESS", who, int(child), val,
                      g_tps[kind].name);
    if (kind == -3 && val != 0)
      ReportViolationf("a PMU program (%s) %s on pid %d counted %llu hits of a breakpoint at wl_child_work in the "
                      "worker's mapping of %s, which only the setuid-root helper it exec'd runs: the program (a "
                      "uprobe on arm64?) followed it into a non-dumpable root process",
                      p.scope == TPROF_PMU_SCOPE_THREAD ? "THREAD" : "PROCESS", who, int(child), val, kHelperPath);
    if (kind == -1 && val > u64(marks))
      ReportViolationf("a PMU program (%s) %s on pid %d counted %llu hits of a breakpoint the child ran %d times "
                      "before its exec into the setuid-root helper",
                      p.scope == TPROF_PMU_SCOPE_THREAD ? "THREAD" : "PROCESS", who, int(child), val, marks);
  }
  CountStat("exec race: programs read");
}

}  // namespace

void OpExecRace(uint64_t seed) {
  SetOp("exec race");
  if (!g_helper_ok) {
    CountStat("exec race: no setuid helper");
    return;
  }
  Rng r(seed, kSceneStream);
  const bool unpriv = Unprivileged();
  (void)HelperWorkInMapping();  // mapped before InOwnCode reads this process's code, and any fork
  (void)InOwnCode(0);
  int dev = OpenTprof();
  if (dev < 0) return;
  int go[2];
  if (::pipe2(go, O_CLOEXEC) != 0) {
    ::close(dev);
    return;
  }
  const int marks = 1 + int(r.Below(20));
  const u64 delay_us = r.Below(4) == 0 ? 0 : r.Below(30000);
  char ms[16];
  std::snprintf(ms, sizeof(ms), "%d", 10 + int(r.Below(40)));
  char arg0[] = "tfz-suid-helper", arg1[] = "--ms";
  char* argv[] = {arg0, arg1, ms, nullptr};
  char* envp[] = {nullptr};
  pid_t child = ForkOwnProcess();
  if (child < 0) {
    ::close(go[0]);
    ::close(go[1]);
    ::close(dev);
    return;
  }
  if (child == 0) {
    // A fork of a threaded process: system calls only.
    ::close(go[1]);
    char c;
    while (::read(go[0], &c, 1) < 0 && errno == EINTR) {
    }
    if (!unpriv && (::syscall(SYS_setgroups, 0, nullptr) != 0 ||
                    ::syscall(SYS_setresgid, kNobody, kNobody, kNobody) != 0 ||
                    ::syscall(SYS_setresuid, kNobody, kNobody, kNobody) != 0))
      ::_exit(125);
    for (int i = 0; i < marks; ++i) {
      tprof_fuzz_exec_race_mark(i);
      ::syscall(SYS_getppid);
    }
    if (delay_us) SleepUs(delay_us);
    ::execve(kHelperPath, argv, envp);
    ::_exit(127);
  }
  ::close(go[0]);

  // The attaches: some before the child is let go, some racing its exec.
  std::vector<RaceProgram> progs;
  RaceSession session;
  bool named_helper = false;
  const int nr = 2 + int(r.Below(5));
  std::vector<std::pair<int, bool>> plan;  // what (0 program, 1 session, 2 thread read), after go
  for (int i = 0; i < nr; ++i) plan.emplace_back(int(r.Below(4)) % 3, r.OneIn(2));
  auto run = [&](int what, bool after) {
    switch (what) {
      case 0: RaceCreateProgram(r, dev, child, after, progs); break;
      case 1:
        if (session.fd < 0) RaceStartSession(r, child, after, session);
        break;
      default: RaceThreadRead(dev, child, unpriv, &named_helper);
    }
  };
  for (const auto& [what, after] : plan)
    if (!after) run(what, false);
  (void)!::write(go[1], "g", 1);
  ::close(go[1]);
  for (const auto& [what, after] : plan)
    if (after) {
      if (r.OneIn(2)) SleepUs(r.Below(delay_us + 2000));
      run(what, true);
    }
  // Until it is a zombie (not reaped: its pid stays its own), read its
  // thread now and then.
  const u64 deadline = MonotonicNs() + 60'000'000'000ULL;
  bool exited = false;
  while (MonotonicNs() < deadline) {
    siginfo_t si{};
    if (::waitid(P_PID, id_t(child), &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == child) {
      exited = true;
      break;
    }
    if (r.OneIn(2)) RaceThreadRead(dev, child, unpriv, &named_helper);
    SleepUs(1000 + r.Below(3000));
  }
  if (!exited) {
    ReportViolationf("the setuid helper (pid %d) did not exit within 60 s: %s", int(child),
                    DescribeProcess(uint32_t(child)).c_str());
    ::kill(child, SIGKILL);
  }
  if (r.OneIn(2)) RaceThreadRead(dev, child, unpriv, &named_helper);
  for (const RaceProgram& p : progs) {
    RaceCheckProgram(p, child, marks, unpriv);
    ::close(p.fd);
  }
  RaceEndSession(session, child, unpriv);
  int st = 0;
  while (::waitpid(child, &st, 0) < 0 && errno == EINTR) {
  }
  ::close(dev);
  if (WIFSIGNALED(st)) {
    ReportViolationf("the setuid helper (pid %d, exec'd %s after its exec race began) was killed by %s%s", int(child),
                    delay_us ? "a moment" : "at once", strsignal(WTERMSIG(st)),
                    In(WTERMSIG(st), {SIGTRAP, SIGILL, SIGSEGV, SIGBUS}) ? " (a probe or breakpoint followed it?)" : "");
  } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
    ReportViolationf("the setuid helper (pid %d) exited with %d%s", int(child), WEXITSTATUS(st),
                    WEXITSTATUS(st) == 127 ? " (its execve failed)" : WEXITSTATUS(st) == 125 ? " (setresuid failed)" : "");
  }
  CountStat("exec races");
}

// ---- user namespaces --------------------------------------------------------------------

namespace {

enum class Target { kStranger, kWorker, kSelf, kInside };
const char* TargetName(Target t) {
  switch (t) {
    case Target::kStranger: return "capable stranger";
    case Target::kWorker: return "worker (outside)";
    case Target::kSelf: return "itself";
    default: return "own child (inside)";
  }
}
const char* kNsOps[] = {"PMU_CREATE thread", "PMU_CREATE process", "SAMPLING_START", "THREAD_READ", "DRAIN",
                        "WINDOW_ADD"};
constexpr int kNrNsOps = 6;

// One attach operation `op` on `pid`; 0 or an errno.
int NsAttach(int op, uint32_t pid) {
  switch (op) {
    case 0:
    case 1: {
      int dev = OpenTprof();
      if (dev < 0) return errno;
      tprof_pmu_program p{};
      p.scope = op == 0 ? TPROF_PMU_SCOPE_THREAD : TPROF_PMU_SCOPE_PROCESS;
      p.pid = pid;
      p.nr_counters = 1;
      p.counters[0].kind = TPROF_PMU_EV_SOFTWARE;
      p.counters[0].config = 3;  // context-switches
      int err = Ioctl(dev, TPROF_IOC_PMU_CREATE, &p);
      if (err == 0) ::close(p.fd);
      ::close(dev);
      return err;
    }
    case 2: {
      int dev = OpenTprof();
      if (dev < 0) return errno;
      tprof_sampling_config c{};
      c.pid = pid;
      c.frequency_hz = 1000;
      int err = Ioctl(dev, TPROF_IOC_SAMPLING_START, &c);
      ::close(dev);
      return err;
    }
    case 3: {
      int dev = OpenTprof();
      if (dev < 0) return errno;
      tprof_thread_read tr{};
      tr.tid = pid;
      tr.flags = TPROF_THREAD_READ_TOTALS;
      int err = Ioctl(dev, TPROF_IOC_THREAD_READ, &tr);
      ::close(dev);
      return err;
    }
    case 4: {
      int dev = OpenTprof();
      if (dev < 0) return errno;
      static thread_local tprof_thread_metrics rows[64];
      tprof_drain d{};
      d.records = u64(reinterpret_cast<uintptr_t>(rows));
      d.capacity = 64;
      d.pid = pid;
      int err = Ioctl(dev, TPROF_IOC_DRAIN, &d);
      ::close(dev);
      return err;
    }
    default: {
      // A window needs a session of one's own: on its own process.
      int dev = OpenTprof();
      if (dev < 0) return errno;
      tprof_sampling_config c{};
      c.pid = uint32_t(::getpid());
      c.frequency_hz = 1000;
      int err = Ioctl(dev, TPROF_IOC_SAMPLING_START, &c);
      for (int i = 0; i < 10 && err == EBUSY; ++i) {  // a session is often running
        SleepUs(10000);
        err = Ioctl(dev, TPROF_IOC_SAMPLING_START, &c);
      }
      if (err == 0) {
        tprof_window_add wa{};
        wa.kind = TPROF_WINDOW_PROCESS;
        wa.pid = pid;
        wa.length = 1ULL << 30;
        wa.block_bytes = 1U << 20;
        err = Ioctl(dev, TPROF_IOC_WINDOW_ADD, &wa);
      } else {
        err = -err;  // the session, not the window: negative
      }
      ::close(dev);
      return err;
    }
  }
}

// Judges one outcome; returns the line for the parent's statistics.
std::string NsJudge(Target t, int op, uint32_t pid, int err, bool in_ns) {
  std::string line = std::string("user namespace: ") + (in_ns ? "" : "(no namespace) ") + TargetName(t) + " " +
                     kNsOps[op] + " ";
  if (err < 0) return line + "own session " + ErrnoName(-err);
  line += ErrnoName(err);
  const bool outside = t == Target::kStranger || t == Target::kWorker;
  const bool gone = ::kill(pid_t(pid), 0) != 0 && errno == ESRCH;
  if (outside) {
    if (err == 0)
      ReportViolationf("%s (pid %u, uid %u outside %s) was attached to with %s by %s: only EACCES is legal (%s)",
                      TargetName(t), pid, kNobody, in_ns ? "the caller's user namespace" : "any namespace",
                      kNsOps[op],
                      in_ns ? "a process with every capability in a user namespace of its own" : "the unprivileged worker",
                      t == Target::kStranger ? "the target has a capability the caller lacks outside"
                                             : "the capability-subset rule holds only inside one user namespace");
    else if (err != EACCES && !(err == ESRCH && gone) && err != EINTR &&
             !((op == 3 || op == 4) && err == ENODATA) && !(op == 5 && (err == ENODATA || err == EPERM)))
      ReportViolationf("%s (pid %u) with %s from %s: %s, where EACCES is the only legal refusal", TargetName(t), pid,
                      kNsOps[op], in_ns ? "a user namespace of the caller's own" : "the unprivileged worker",
                      ErrnoName(err).c_str());
  } else {
    const bool perf_gated = op == 0 || op == 1 || op == 2;
    bool ok = err == 0 || err == EINTR || err == ENOMEM || err == EMFILE || (err == ESRCH && gone) ||
              (err == EACCES && perf_gated && PerfParanoidLevel() > 2) || (op == 2 && err == EBUSY) ||
              ((op == 3 || op == 4) && (err == ENODATA || err == ESRCH)) || (op == 5 && err == ENOSPC);
    if (!ok)
      ReportViolationf("%s (pid %u) with %s from inside a user namespace of its own: %s (without the namespace: "
                      "success, or what perf_event_paranoid %d, a busy session or accounting being off explain)",
                      TargetName(t), pid, kNsOps[op], ErrnoName(err).c_str(), PerfParanoidLevel());
  }
  return line;
}

void Report(int fd, const std::string& line) { (void)!::write(fd, (line + "\n").c_str(), line.size() + 1); }

void UsernsChild(Rng& r, int rep, uint32_t worker, pid_t stranger) {
  SetOp("user namespace child");
  if (::unshare(CLONE_NEWUSER) != 0) {
    Report(rep, "user namespace: unshare " + ErrnoName(errno));
    return;
  }
  char map[32];
  std::snprintf(map, sizeof(map), "0 %u 1", kNobody);
  if (!WriteFile("/proc/self/setgroups", "deny") || !WriteFile("/proc/self/uid_map", map) ||
      !WriteFile("/proc/self/gid_map", map)) {
    Report(rep, "user namespace: id maps " + ErrnoName(errno));
    return;
  }
  if (::geteuid() != 0) {
    ReportViolationf("after unshare(CLONE_NEWUSER) and uid_map \"%s\", euid is %u, not 0", map, ::geteuid());
    return;
  }
  Report(rep, "user namespace: entered");
  pid_t inside = ForkOwnProcess();
  if (inside == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (;;) {
      ::syscall(SYS_getppid);
      SleepUs(5000);
    }
  }
  const int n = 6 + int(r.Below(10));
  for (int i = 0; i < n; ++i) {
    Target t = Target(r.Below(4));
    uint32_t pid = 0;
    switch (t) {
      case Target::kStranger:
        if (stranger <= 0) continue;
        pid = uint32_t(stranger);
        break;
      case Target::kWorker: pid = worker; break;
      case Target::kSelf: pid = r.OneIn(2) ? 0 : uint32_t(::getpid()); break;
      default:
        if (inside <= 0) continue;
        pid = uint32_t(inside);
    }
    const int op = int(r.Below(kNrNsOps));
    int err = NsAttach(op, pid);
    Report(rep, NsJudge(t, op, pid == 0 ? uint32_t(::getpid()) : pid, err, true));
  }
  if (inside > 0) {
    ::kill(inside, SIGKILL);
    ::waitpid(inside, nullptr, 0);
  }
}

}  // namespace

void OpUserNamespace(uint64_t seed) {
  if (!Unprivileged()) return;
  SetOp("user namespace");
  Rng r(seed, kSceneStream);
  const pid_t stranger = g_capable_stranger;
  // The control: without a namespace the stranger's capability is not
  // the worker's either.
  if (stranger > 0 && r.OneIn(3)) {
    const int op = int(r.Below(kNrNsOps));
    int err = NsAttach(op, uint32_t(stranger));
    CountStat(NsJudge(Target::kStranger, op, uint32_t(stranger), err, false));
  }
  int rep[2];
  if (::pipe2(rep, O_CLOEXEC) != 0) return;
  const uint32_t worker = uint32_t(::getpid());
  pid_t child = ForkOwnProcess();
  if (child < 0) {
    ::close(rep[0]);
    ::close(rep[1]);
    return;
  }
  if (child == 0) {
    MarkForkedChild();
    ::close(rep[0]);
    UsernsChild(r, rep[1], worker, stranger);
    ::_exit(0);
  }
  ::close(rep[1]);
  std::string buf;
  char chunk[512];
  const u64 deadline = MonotonicNs() + 120'000'000'000ULL;
  for (;;) {
    pollfd pf{rep[0], POLLIN, 0};
    int pr = ::poll(&pf, 1, 1000);
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) {
      if (MonotonicNs() > deadline) break;
      continue;
    }
    ssize_t got = ::read(rep[0], chunk, sizeof(chunk));
    if (got <= 0) break;
    buf.append(chunk, size_t(got));
    for (size_t nl; (nl = buf.find('\n')) != std::string::npos; buf.erase(0, nl + 1)) CountStat(buf.substr(0, nl));
  }
  ::close(rep[0]);
  int st = 0;
  while (::waitpid(child, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 66) ChildReportedViolation();
  else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    ReportViolationf("the user-namespace child %d ended with status 0x%x", int(child), st);
  CountStat("user namespace scenes");
}

}  // namespace tprof_fuzz
