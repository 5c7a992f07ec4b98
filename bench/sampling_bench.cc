// Sampling profiler benchmark, run inside one guest boot by bench/run.sh:
//   1. slowdown of a fixed amount of CPU-bound work on every CPU (one
//      process per CPU), unprofiled against `tprofctl record` and
//      `perf record -a -e cpu-clock` at 1 kHz and 10 kHz, repetitions
//      interleaved (A B C D E, A B C D E, ...), medians;
//   2. the highest clock rate whose recording loses no sample with the
//      default buffer size (a sweep of `tprofctl record --freq F`);
//   3. bytes: the profile file against perf.data for the same run, and the
//      sample records moved through the buffers per second (tprof's 56-byte
//      records against perf's PERF_RECORD_SAMPLE);
//   4. whole stacks: the same work at the bottom of a 32-frame call chain
//      (--frames N: another depth; two depths give the cost per frame),
//      `tprofctl record -g` (default depth 64) against `perf record -g`
//      (frame-pointer call graphs) at 1 kHz and 10 kHz: each one's added
//      cost over the unprofiled run of the same rep, and the file sizes;
//   5. the scheduler tick: `tprofctl record --clock tick` against tprof's
//      and perf's cpu-clock at the same rate (HZ), without and with whole
//      stacks: the instructions each adds per sample (under --icount);
//   6. always on: `tprofctl record -a --continuous --clock tick
//      --aggregate` at two intervals: the whole machine's added time, the
//      recorder's wake-ups per second, the series' bytes, kernel memory.
// Every profiler runs as a command (fork/exec) the way a user runs it; the
// workload reports its own wall time, which is what "slowdown" means here.
//
//   tprof_sampling_bench [--perf PATH] [--reps N] [--seconds S]
//                        [--stacks-only | --tick-only | --continuous-only]
//                        [--frames N]
//   tprof_sampling_bench --workload CHUNKS RESULT_FILE [DEPTH]   (the workload)
#include <dirent.h>
#include <linux/tprof.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kTprofData = "/tmp/tprof.data";
constexpr const char* kPerfData = "/tmp/perf.data";
constexpr const char* kWorkloadResult = "/tmp/sampling-bench-workload.ns";
constexpr const char* kLog = "/tmp/sampling-bench-run.log";
// Bytes of one sample record: tprof's struct tprof_rec_sample; perf's
// PERF_RECORD_SAMPLE size follows from its sample_type, read from perf.data.
constexpr uint64_t kTprofSampleBytes = 56;
uint64_t g_perf_sample_bytes = 0;
std::string g_perf_sample_type;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "tprof_sampling_bench: %s\n", what.c_str());
  std::exit(1);
}

// ---- the workload -----------------------------------------------------------

// One chunk: 4096 dependent multiply-xorshift steps, then one syscall.
uint64_t Chunks(long n) {
  uint64_t x = 0x9e3779b97f4a7c15ull ^ uint64_t(::getpid());
  for (long c = 0; c < n; ++c) {
    for (int i = 0; i < 4096; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      x ^= x >> 17;
    }
    x += uint64_t(::syscall(SYS_getppid));
  }
  return x;
}

// The frames between main and the work in section 4: deep enough that
// walking them is most of a stack sample's cost, under both profilers'
// limits (tprof's default 64, perf's kernel.perf_event_max_stack 127).
int g_frames = 32;

// Calls itself `depth` times, then does the chunks. The asm after the call
// keeps the compiler from turning the recursion into a loop, so each level
// is a real frame with a frame pointer.
__attribute__((noinline)) uint64_t Deep(int depth, long chunks) {
  if (depth <= 1) return Chunks(chunks);
  uint64_t r = Deep(depth - 1, chunks);
  asm volatile("" : "+r"(r));
  return r ^ uint64_t(depth);
}

// The sum over every thread of `pid` of what `read` takes from that
// thread's /proc/PID/task/TID/`file`; 0 if unreadable.
template <typename Read>
uint64_t SumOverThreads(pid_t pid, const char* file, Read read) {
  uint64_t total = 0;
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(dir + "/" + e->d_name + "/" + file);
    total += read(in);
  }
  ::closedir(d);
  return total;
}

// CPU time of every thread of `pid` in ns (schedstat's first field: exact,
// and under --icount instructions).
uint64_t ProcessCpuNs(pid_t pid) {
  return SumOverThreads(pid, "schedstat", [](std::ifstream& in) {
    uint64_t ns = 0;
    return in >> ns ? ns : 0;
  });
}

// Voluntary context switches of every thread of `pid` (each a sleep it
// woke from).
uint64_t ProcessWakeups(pid_t pid) {
  return SumOverThreads(pid, "status", [](std::ifstream& in) {
    for (std::string line; std::getline(in, line);)
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) return std::strtoull(line.c_str() + 24, nullptr, 10);
    return 0ull;
  });
}

int NumCpus() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

// One process per CPU, each doing `chunks` chunks `depth` frames deep (0:
// directly); writes the wall time of the whole in ns to `result`, the CPU
// time its parent (the profiler that started it) used meanwhile, and the
// times the parent woke.
int RunWorkload(long chunks, const char* result, int depth) {
  int n = NumCpus();
  const pid_t parent = ::getppid();
  const uint64_t parent0 = ProcessCpuNs(parent), wakeups0 = ProcessWakeups(parent);
  auto t0 = Clock::now();
  std::vector<pid_t> kids;
  for (int i = 0; i < n; ++i) {
    pid_t pid = ::fork();
    if (pid < 0) Die("fork");
    if (pid == 0) {
      volatile uint64_t sink = depth > 0 ? Deep(depth, chunks) : Chunks(chunks);
      (void)sink;
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  int rc = 0;
  for (pid_t pid : kids) {
    int st = 0;
    if (::waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) rc = 1;
  }
  double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  const uint64_t parent_ns = ProcessCpuNs(parent) - parent0;
  const uint64_t wakeups = ProcessWakeups(parent) - wakeups0;
  FILE* f = std::fopen(result, "w");
  if (!f) Die(std::string("cannot write ") + result);
  std::fprintf(f, "%.0f %" PRIu64 " %" PRIu64 "\n", ns, parent_ns, wakeups);
  std::fclose(f);
  return rc;
}

// ---- running commands --------------------------------------------------------

std::string g_self;  // this program, for the workload command line

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

uint64_t FileSize(const char* path) {
  struct stat st;
  return ::stat(path, &st) == 0 ? uint64_t(st.st_size) : 0;
}

struct Run {
  double workload_s = 0;  // the workload's own wall time
  double profiler_cpu_s = 0;  // CPU time of the profiler's process meanwhile
  double command_s = 0;   // the whole command, profiler start-up and teardown included
  uint64_t file_bytes = 0;
  uint64_t samples = 0;   // taken (tprof) or written (perf)
  uint64_t lost_samples = 0;
  uint64_t lost_records = 0;
  double duration_s = 0;  // tprof: first to last sample
  uint64_t profiler_wakeups = 0;  // the profiler's sleeps ended while the workload ran
  uint64_t files = 0;     // continuous: the interval files written
};

// Runs argv with stdout and stderr to kLog; returns its wall time. Dies if it
// fails, showing the log.
double Exec(const std::vector<std::string>& argv) {
  auto t0 = Clock::now();
  pid_t pid = ::fork();
  if (pid < 0) Die("fork");
  if (pid == 0) {
    int fd = ::open(kLog, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) ::_exit(126);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::close(fd);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  int st = 0;
  if (::waitpid(pid, &st, 0) != pid) Die("waitpid");
  double s = Seconds(Clock::now() - t0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    std::string cmd;
    for (const std::string& a : argv) cmd += " " + a;
    std::string log = ReadFile(kLog);
    if (log.size() > 4000) log = "..." + log.substr(log.size() - 4000);
    Die("command failed (status " + std::to_string(st) + "):" + cmd + "\n" + log);
  }
  return s;
}

std::vector<std::string> WorkloadArgv(long chunks, int depth) {
  return {g_self, "--workload", std::to_string(chunks), kWorkloadResult, std::to_string(depth)};
}

// The workload's result: its wall time, its parent's CPU time and wake-ups
// meanwhile.
void ReadWorkloadResult(Run* r) {
  std::string s = ReadFile(kWorkloadResult);
  if (s.empty()) Die("the workload wrote no result");
  char* end = nullptr;
  r->workload_s = std::strtod(s.c_str(), &end) / 1e9;
  r->profiler_cpu_s = std::strtod(end, &end) / 1e9;
  r->profiler_wakeups = std::strtoull(end, nullptr, 10);
}

// The number after "key": in the JSON text, first occurrence.
std::optional<uint64_t> JsonNumber(const std::string& json, const std::string& key) {
  size_t p = json.find("\"" + key + "\"");
  if (p == std::string::npos) return std::nullopt;
  p = json.find(':', p);
  if (p == std::string::npos) return std::nullopt;
  ++p;
  while (p < json.size() && (json[p] == ' ' || json[p] == '\n')) ++p;
  if (p >= json.size() || json[p] < '0' || json[p] > '9') return std::nullopt;
  return std::strtoull(json.c_str() + p, nullptr, 10);
}

Run RunPlain(long chunks, int depth = 0) {
  ::unlink(kWorkloadResult);
  Run r;
  r.command_s = Exec(WorkloadArgv(chunks, depth));
  ReadWorkloadResult(&r);
  return r;
}

// stacks: -g (whole stacks, default depth), or --call-graph call_graph;
// depth: the workload's.
// cold_tables: with an empty store of unwind tables (XDG_CACHE_HOME), so
// that the recording builds every table it needs, as the first recording
// of a program on a machine does; otherwise the store the earlier runs
// filled (the bench warms it first).
// tick: in the scheduler tick (--clock tick), at the kernel's HZ;
// aggregate: counted in the module (--aggregate).
Run RunTprof(long chunks, unsigned hz, bool stacks = false, int depth = 0,
             const std::string& call_graph = "", bool cold_tables = false, bool tick = false,
             bool aggregate = false) {
  ::unlink(kWorkloadResult);
  ::unlink(kTprofData);
  const char* const kColdStore = "/tmp/tprof-bench-cold-store";
  std::error_code ec;
  std::filesystem::remove_all(kColdStore, ec);
  if (cold_tables) ::setenv("XDG_CACHE_HOME", kColdStore, 1);
  // -a: every CPU, as perf record -a (record alone follows only the workload).
  std::vector<std::string> argv = {"tprofctl", "record", "-a", "-o", kTprofData, "--format", "json",
                                   "--top", "1"};
  if (aggregate) argv.push_back("--aggregate");
  if (tick)
    argv.insert(argv.end(), {"--clock", "tick"});
  else
    argv.insert(argv.end(), {"--freq", std::to_string(hz)});
  if (stacks && call_graph.empty()) argv.push_back("-g");
  if (stacks && !call_graph.empty()) argv.insert(argv.end(), {"--call-graph", call_graph});
  argv.push_back("--");
  for (const std::string& a : WorkloadArgv(chunks, depth)) argv.push_back(a);
  Run r;
  r.command_s = Exec(argv);
  if (cold_tables) ::unsetenv("XDG_CACHE_HOME");
  ReadWorkloadResult(&r);
  r.file_bytes = FileSize(kTprofData);
  std::string out = ReadFile(kLog);
  // The dump's totals come from the per-CPU control areas (exact).
  auto taken = JsonNumber(out, "samples_taken");
  auto lost = JsonNumber(out, "lost_samples");
  auto lost_rec = JsonNumber(out, "lost_records");
  auto dur = JsonNumber(out, "duration_ns");
  if (!taken || !lost || !lost_rec) Die("no totals in tprofctl record's output:\n" + out);
  r.samples = *taken;
  r.lost_samples = *lost;
  r.lost_records = *lost_rec;
  r.duration_s = dur ? double(*dur) / 1e9 : 0;
  return r;
}

std::string g_perf;  // perf binary, empty: no perf rows

// stacks: -g (frame-pointer call graphs), or --call-graph call_graph;
// depth: the workload's.
Run RunPerf(long chunks, unsigned hz, bool stacks = false, int depth = 0,
            const std::string& call_graph = "") {
  ::unlink(kWorkloadResult);
  ::unlink(kPerfData);
  std::string old = std::string(kPerfData) + ".old";
  ::unlink(old.c_str());
  std::vector<std::string> argv = {g_perf, "record", "-e", "cpu-clock", "-F", std::to_string(hz),
                                   "-a", "-o", kPerfData};
  if (stacks && call_graph.empty()) argv.push_back("-g");
  if (stacks && !call_graph.empty()) argv.insert(argv.end(), {"--call-graph", call_graph});
  argv.push_back("--");
  for (const std::string& a : WorkloadArgv(chunks, depth)) argv.push_back(a);
  Run r;
  r.command_s = Exec(argv);
  ReadWorkloadResult(&r);
  r.file_bytes = FileSize(kPerfData);
  // "[ perf record: Captured and wrote 1.234 MB /tmp/perf.data (56789 samples) ]"
  std::string out = ReadFile(kLog);
  size_t p = out.find("Captured and wrote");
  if (p != std::string::npos) p = out.find('(', p);
  if (p == std::string::npos) Die("no sample count in perf record's output:\n" + out);
  r.samples = std::strtoull(out.c_str() + p + 1, nullptr, 10);
  // Lost samples: PERF_RECORD_LOST / LOST_SAMPLES in the file (the stats
  // list only the kinds present).
  Exec({g_perf, "report", "--stats", "-i", kPerfData});
  std::string stats = ReadFile(kLog);
  for (const char* kind : {"  LOST events:", "LOST_SAMPLES events:"}) {
    size_t q = stats.find(kind);
    if (q != std::string::npos) r.lost_samples += std::strtoull(stats.c_str() + q + std::strlen(kind), nullptr, 10);
  }
  if (!g_perf_sample_bytes && !stacks) {
    // "sample_type: IP|TID|TIME|ID|CPU|PERIOD": the header and one u64 each.
    Exec({g_perf, "evlist", "-v", "-i", kPerfData});
    std::string ev = ReadFile(kLog);
    size_t q = ev.find("sample_type: ");
    if (q == std::string::npos) Die("no sample_type in perf evlist -v:\n" + ev);
    q += std::strlen("sample_type: ");
    g_perf_sample_type = ev.substr(q, ev.find_first_of(", \n", q) - q);
    g_perf_sample_bytes = 8;
    std::stringstream flags(g_perf_sample_type);
    for (std::string f; std::getline(flags, f, '|');) {
      if (f == "IP" || f == "TID" || f == "TIME" || f == "ADDR" || f == "ID" || f == "STREAM_ID" ||
          f == "CPU" || f == "PERIOD" || f == "IDENTIFIER")
        g_perf_sample_bytes += 8;
      else
        Die("perf sample_type " + g_perf_sample_type + ": unexpected " + f);
    }
  }
  return r;
}

std::string Hz(unsigned hz) {
  return hz % 1000 == 0 ? std::to_string(hz / 1000) + " kHz" : std::to_string(hz) + " Hz";
}

std::string Bytes(double b) {
  char buf[32];
  if (b >= 1e6)
    std::snprintf(buf, sizeof(buf), "%.2f MB", b / 1e6);
  else if (b >= 1e3)
    std::snprintf(buf, sizeof(buf), "%.1f kB", b / 1e3);
  else
    std::snprintf(buf, sizeof(buf), "%.0f B", b);
  return buf;
}

void WriteSysctl(const char* path, const char* value) {
  int fd = ::open(path, O_WRONLY);
  if (fd < 0) return;
  (void)!::write(fd, value, std::strlen(value));
  ::close(fd);
}

// One row of a slowdown table: a profiler configuration and its runs.
struct Config {
  std::string name;
  char tool;  // '-' none, 't' tprof, 'p' perf
  unsigned hz;
  std::vector<Run> runs;
  bool flat = false;  // with a deep workload: the profiler without stacks
  std::string call_graph = "";  // --call-graph MODE instead of -g
  bool cold_tables = false;     // tprof: no unwind tables stored (RunTprof)
  bool tick = false;            // tprof: in the scheduler tick (hz is HZ)
  bool aggregate = false;       // tprof: counted in the module
};

template <typename Field>
double Med(const Config& c, Field field) {
  std::vector<double> v;
  for (const Run& r : c.runs) v.push_back(double(field(r)));
  return Median(v);
}

// Ratios are paired within a rep (each run against the unprofiled run of
// the same rep), then the median is taken: the host's load drifts.
std::vector<double> Paired(const Config& a, const Config& b) {
  std::vector<double> v;
  for (size_t r = 0; r < a.runs.size(); ++r) v.push_back(a.runs[r].workload_s / b.runs[r].workload_s);
  std::sort(v.begin(), v.end());
  return v;
}

// Reps of every config, interleaved (A B C, A B C, ...): the workload
// `depth` frames deep, and the profilers with stacks if depth > 0 (unless
// the config is flat).
void RunInterleaved(std::vector<Config>& configs, long chunks, int reps, int depth) {
  for (int r = 0; r < reps; ++r)
    for (Config& c : configs) {
      const bool stacks = depth > 0 && !c.flat;
      c.runs.push_back(c.tool == '-'   ? RunPlain(chunks, depth)
                       : c.tool == 't' ? RunTprof(chunks, c.hz, stacks, depth, c.call_graph,
                                                  c.cold_tables, c.tick, c.aggregate)
                                       : RunPerf(chunks, c.hz, stacks, depth, c.call_graph));
    }
}

// configs[0] is the unprofiled run the others are paired with.
void PrintSlowdownTable(const std::vector<Config>& configs) {
  std::printf("%-30s %9s %8s %15s %9s %9s %10s %6s %9s\n", "run", "workload", "vs none", "[range]",
              "command", "samples", "file", "lost", "prof CPU");
  for (const Config& c : configs) {
    double w = Med(c, [](const Run& r) { return r.workload_s; });
    double cmd = Med(c, [](const Run& r) { return r.command_s; });
    std::vector<double> ratios = Paired(c, configs[0]);
    char range[32];
    std::snprintf(range, sizeof(range), "[%.3f-%.3f]", ratios.front(), ratios.back());
    std::printf("%-30s %8.3fs %7.3fx %15s %8.2fs", c.name.c_str(), w, Median(ratios), range, cmd);
    if (c.tool == '-') {
      std::printf("\n");
      continue;
    }
    double samples = Med(c, [](const Run& r) { return r.samples; });
    double bytes = Med(c, [](const Run& r) { return r.file_bytes; });
    std::printf(" %9.0f %10s", samples, Bytes(bytes).c_str());
    uint64_t lost = 0;
    for (const Run& r : c.runs) lost += r.lost_samples + r.lost_records;
    std::printf(" %6" PRIu64 " %8.3fs\n", lost, Med(c, [](const Run& r) { return r.profiler_cpu_s; }));
  }
}

// Section 4: whole stacks, tprof -g against perf -g on the deep workload.
// Returns whether both goals were met at every rate.
bool StackSection(long chunks, int reps) {
  std::vector<Config> configs = {{"unprofiled, " + std::to_string(g_frames) + " frames deep", '-', 0, {}},
                                 {"tprofctl record -a -g -F 1000", 't', 1000, {}},
                                 {"perf record -a -g -F 1000", 'p', 1000, {}},
                                 {"tprofctl record -a -g -F 10000", 't', 10000, {}},
                                 {"perf record -a -g -F 10000", 'p', 10000, {}},
                                 {"tprofctl record -a -F 10000", 't', 10000, {}, true},
                                 {"perf record -a -F 10000", 'p', 10000, {}, true},
                                 // The other call graphs: frame pointers only, and perf's
                                 // copies of 8 KiB walked afterwards.
                                 {"tprofctl --call-graph fp -F 1000", 't', 1000, {}, false, "fp"},
                                 {"perf --call-graph dwarf -F 1000", 'p', 1000, {}, false, "dwarf"},
                                 // The first recording on a machine: every table built.
                                 {"tprofctl -a -g -F 1000, cold", 't', 1000, {}, false, "", true}};
  if (g_perf.empty())
    configs.erase(std::remove_if(configs.begin(), configs.end(),
                                 [](const Config& c) { return c.tool == 'p'; }),
                  configs.end());
  // The store of unwind tables filled as by an earlier recording of the
  // same run at the highest rate, so that it holds the table of every file
  // such a run samples through (a library sampled only at exit, at 10 kHz,
  // built its table in the measured run: 1,800 samples lost): the rows
  // without "cold" read it.
  (void)RunTprof(chunks, 10000, true, g_frames);
  RunInterleaved(configs, chunks, reps, g_frames);
  std::printf("\n4. whole stacks: the same work %d frames deep, %d interleaved reps\n"
              "(tprofctl -g: default depth 64, walked with CFI tables in the module (cfi); perf -g:\n"
              " frame-pointer call graphs; perf dwarf: 8 KiB stack copies; without -g for\n"
              " comparison; columns as in 1.; prof CPU: the profiler process's CPU time while the\n"
              " workload ran; cold: with no unwind tables stored by an earlier recording, the\n"
              " rest read them from the store a first recording filled)\n",
              g_frames, reps);
  PrintSlowdownTable(configs);
  // Where a sample's cost goes: on one CPU the profiler's own process
  // (reducing records, writing the file) runs between the workload's
  // slices; the rest is the sample handler (stack walk, record) and what
  // the workload loses to it (caches, TLB).
  std::printf("per sample (median added workload time / samples; ns, instructions under --icount):\n");
  const double base = Med(configs[0], [](const Run& r) { return r.workload_s; });
  for (const Config& c : configs) {
    if (c.tool == '-') continue;
    const double samples = Med(c, [](const Run& r) { return r.samples; });
    if (samples <= 0) continue;
    const double added = (Med(c, [](const Run& r) { return r.workload_s; }) - base) / samples * 1e9;
    const double prof = Med(c, [](const Run& r) { return r.profiler_cpu_s; }) / samples * 1e9;
    std::printf("  %-30s %8.0f: profiler process %8.0f, sample handler and the rest %8.0f\n",
                c.name.c_str(), added, prof, added - prof);
  }
  if (g_perf.empty()) return false;
  bool met = true;
  for (unsigned hz : {1000u, 10000u}) {
    const Config *tp = nullptr, *pf = nullptr;
    for (const Config& c : configs)
      if (c.hz == hz && !c.flat && c.call_graph.empty() && !c.cold_tables)
        (c.tool == 't' ? tp : pf) = &c;
    // Added cost: the slowdown over the same rep's unprofiled run.
    double ta = Median(Paired(*tp, configs[0])) - 1, pa = Median(Paired(*pf, configs[0])) - 1;
    std::vector<double> v = Paired(*tp, *pf);
    double tb = Med(*tp, [](const Run& r) { return r.file_bytes; });
    double pb = Med(*pf, [](const Run& r) { return r.file_bytes; });
    bool cost_ok = ta <= pa, size_ok = tb * 10 <= pb;
    met &= cost_ok && size_ok;
    std::printf("stacks at %-7s added cost tprof %+.2f%% vs perf %+.2f%% (workload time tprof/perf "
                "%.4fx [%.3f-%.3f]): %s;\n"
                "                  file %s vs %s (%.4fx): %s\n",
                Hz(hz).c_str(), 100 * ta, 100 * pa, Median(v), v.front(), v.back(),
                cost_ok ? "not more than perf" : "MORE than perf", Bytes(tb).c_str(),
                Bytes(pb).c_str(), pb > 0 ? tb / pb : 0.0,
                size_ok ? "at most a tenth" : "MORE than a tenth");
  }
  return met;
}

// The median added workload time of config c over configs[0] (seconds).
double Added(const std::vector<Config>& configs, const Config& c) {
  return Med(c, [](const Run& r) { return r.workload_s; }) -
         Med(configs[0], [](const Run& r) { return r.workload_s; });
}

// Section 5: the scheduler tick against the cpu-clock timers at its rate,
// on the flat workload and, with whole stacks, on the deep one. At HZ a
// run holds few samples, so a recording's fixed costs (start-up, reading
// kallsyms and the unwind tables, the first MAP records) would weigh on
// each: the cost of a sample is the marginal one, between a run of the
// fixed work and one three times as long. Returns whether the tick's cost
// per sample is at most 0.3x perf's without stacks and 0.7x with them.
bool TickSection(long chunks, int reps) {
  // HZ: the rate a tick recording reports asking for.
  (void)RunTprof(chunks / 2 + 1, 0, false, 0, "", false, true);  // spans over half a second
  const unsigned hz =
      static_cast<unsigned>(JsonNumber(ReadFile(kLog), "requested_hz").value_or(0));
  if (hz == 0) Die("no HZ in a tick recording's report:\n" + ReadFile(kLog));
  // The unwind tables of the deep workload's files stored, as StackSection does.
  (void)RunTprof(chunks, 10000, true, g_frames);
  std::printf("\n5. the scheduler tick (HZ %u) against cpu-clock timers at %u Hz, %d interleaved "
              "reps\n(per sample: the marginal added workload time between the work and three "
              "times it,\n over the samples the longer run added; the tick's own interrupt runs "
              "in the\n unprofiled runs too)\n",
              hz, hz, reps);
  bool met = true;
  for (int depth : {0, g_frames}) {
    const std::string g = depth ? " -g" : "";
    std::vector<Config> configs = {
        {depth ? "unprofiled, " + std::to_string(depth) + " frames deep" : "unprofiled", '-', 0, {}},
        {"tprofctl record -a --clock tick" + g, 't', hz, {}},
        {"tprofctl record -a -F " + std::to_string(hz) + g, 't', hz, {}},
        {"perf record -a -F " + std::to_string(hz) + g, 'p', hz, {}}};
    configs[1].tick = true;
    if (g_perf.empty()) configs.pop_back();
    // Counted in the module, by address or by stack; with stacks also
    // walked as perf -g walks them (frame pointers, not the CFI tables).
    configs.push_back({"tprofctl record -a --clock tick --aggregate" + g, 't', hz, {}});
    configs.back().tick = configs.back().aggregate = true;
    if (depth) {
      configs.push_back({"tprofctl record -a --clock tick --aggregate --call-graph fp", 't', hz, {}});
      configs.back().tick = configs.back().aggregate = true;
      configs.back().call_graph = "fp";
    }
    std::vector<Config> longer = configs;
    for (int r = 0; r < reps; ++r) {
      RunInterleaved(configs, chunks, 1, depth);
      RunInterleaved(longer, chunks * 3, 1, depth);
    }
    PrintSlowdownTable(longer);
    std::vector<double> per_sample(configs.size());
    for (size_t i = 1; i < configs.size(); ++i) {
      const double samples = Med(longer[i], [](const Run& r) { return r.samples; }) -
                             Med(configs[i], [](const Run& r) { return r.samples; });
      const double added = Added(longer, longer[i]) - Added(configs, configs[i]);
      per_sample[i] = samples > 0 ? added / samples * 1e9 : 0;
      std::printf("  %-36s %8.0f a sample (the whole recording's added time over its samples: "
                  "%.0f)\n",
                  configs[i].name.c_str(), per_sample[i],
                  Added(longer, longer[i]) / Med(longer[i], [](const Run& r) { return r.samples; }) *
                      1e9);
    }
    if (g_perf.empty()) {
      met = false;
      continue;
    }
    // The goal is the cheapest tprof way's: counted in the module (with -g, walking frame
    // pointers as perf -g does).
    const double tick = per_sample.back(), perf = per_sample[3];
    const double goal = depth ? 0.7 : 0.3;
    const bool ok = perf > 0 && tick <= goal * perf;
    met &= ok;
    std::printf("tick%s: %.0f vs perf's %.0f a sample (%.3fx): %s\n", g.c_str(), tick, perf,
                perf > 0 ? tick / perf : 0.0,
                ok ? (depth ? "at most 0.7x" : "at most 0.3x")
                   : (depth ? "MORE than 0.7x" : "MORE than 0.3x"));
  }
  return met;
}

// `tprofctl record -a --continuous --clock tick --aggregate --interval I`
// (the tprof-continuous service's way) around the workload.
Run RunContinuous(long chunks, double interval_s) {
  ::unlink(kWorkloadResult);
  const char* const kSeries = "/tmp/tprof-bench-series";
  std::error_code ec;
  std::filesystem::remove_all(kSeries, ec);
  std::filesystem::create_directory(kSeries, ec);
  char interval[32];
  std::snprintf(interval, sizeof(interval), "%g", interval_s);
  std::vector<std::string> argv = {"tprofctl", "record", "-a", "--continuous", "--clock", "tick",
                                   "--aggregate", "--interval", interval, "--keep", "0",
                                   "--out-dir", kSeries, "--"};
  for (const std::string& a : WorkloadArgv(chunks, 0)) argv.push_back(a);
  Run r;
  r.command_s = Exec(argv);
  ReadWorkloadResult(&r);
  // "tprofctl: F interval files, N samples, L lost, in DIR"
  const std::string out = ReadFile(kLog);
  size_t p = out.find(" interval files, ");
  if (p == std::string::npos) Die("no summary in tprofctl record --continuous's output:\n" + out);
  p = out.rfind(' ', p - 1) + 1;
  char* end = nullptr;
  r.files = std::strtoull(out.c_str() + p, &end, 10);
  r.samples = std::strtoull(end + std::strlen(" interval files, "), &end, 10);
  r.lost_samples = std::strtoull(end + std::strlen(" samples, "), nullptr, 10);
  for (const auto& f : std::filesystem::directory_iterator(kSeries, ec)) r.file_bytes += f.file_size(ec);
  return r;
}

// Section 6: the whole machine's cost of the always-on way, at the tick
// rate: the workload's added time (every instruction the machine ran
// beside it, under --icount on one CPU: the tick's sampling, the
// recorder's wake-ups, reads and files). The cost is a + b/I for interval
// I (b: one file's writing), solved from two intervals and given at the
// service's 60 s. Returns whether that is under 0.3%.
bool ContinuousSection(long chunks, int reps) {
  const double shorter = 0.5, longer = 2;
  std::vector<Config> configs = {{"unprofiled", '-', 0, {}},
                                 {"--continuous --interval 0.5", 'c', 0, {}},
                                 {"--continuous --interval 2", 'c', 0, {}}};
  for (int r = 0; r < reps; ++r)
    for (size_t i = 0; i < configs.size(); ++i)
      configs[i].runs.push_back(i == 0 ? RunPlain(chunks) : RunContinuous(chunks, i == 1 ? shorter : longer));
  std::printf("\n6. always on: tprofctl record -a --continuous --clock tick --aggregate, %d interleaved reps\n"
              "(added: the workload's time over the same rep's unprofiled run, median; wake-ups:\n"
              " the recorder's sleeps ended per second of workload; files and bytes: the series)\n",
              reps);
  std::printf("%-30s %9s %9s %9s %10s %6s %10s %6s\n", "run", "workload", "added", "samples", "wake-ups/s",
              "files", "bytes", "lost");
  std::vector<double> added(configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    const double w = Med(c, [](const Run& r) { return r.workload_s; });
    added[i] = Median(Paired(c, configs[0])) - 1;
    std::printf("%-30s %8.3fs %+8.3f%%", c.name.c_str(), w, 100 * added[i]);
    if (i == 0) {
      std::printf("\n");
      continue;
    }
    uint64_t lost = 0;
    for (const Run& r : c.runs) lost += r.lost_samples;
    std::printf(" %9.0f %10.1f %6.0f %10s %6" PRIu64 "\n", Med(c, [](const Run& r) { return r.samples; }),
                Med(c, [](const Run& r) { return double(r.profiler_wakeups) / r.workload_s; }),
                Med(c, [](const Run& r) { return r.files; }),
                Bytes(Med(c, [](const Run& r) { return r.file_bytes; })).c_str(), lost);
  }
  const double per_file = (added[1] - added[2]) / (1 / shorter - 1 / longer);  // b
  const double steady = added[2] - per_file / longer;                          // a
  const double at_60 = steady + per_file / 60;
  // Kernel memory per CPU at the defaults record uses: two buffer halves
  // (MAP/COMM records and what the table had no room for) and two tables.
  const double kernel_bytes = 2.0 * TPROF_SAMPLING_DEFAULT_HALF_BYTES +
                              2.0 * TPROF_AGGREGATE_DEFAULT_SLOTS * sizeof(tprof_aggregate_entry);
  std::printf("sampling and reading: %+.3f%%; a file a second: %+.3f%%; so at --interval 60 (the service): "
              "%+.3f%%\nkernel memory per CPU: %s (2 x %u KiB halves, 2 x %u-slot tables)\n",
              100 * steady, 100 * per_file, 100 * at_60, Bytes(kernel_bytes).c_str(),
              TPROF_SAMPLING_DEFAULT_HALF_BYTES / 1024, TPROF_AGGREGATE_DEFAULT_SLOTS);
  return at_60 < 0.003;
}

}  // namespace

int main(int argc, char** argv) {
  if ((argc == 4 || argc == 5) && std::strcmp(argv[1], "--workload") == 0)
    return RunWorkload(std::atol(argv[2]), argv[3], argc == 5 ? std::atoi(argv[4]) : 0);

  int reps = 5;
  double target_s = 3.0;
  bool stacks_only = false, tick_only = false, continuous_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--perf" && i + 1 < argc)
      g_perf = argv[++i];
    else if (a == "--reps" && i + 1 < argc)
      reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--seconds" && i + 1 < argc)
      target_s = std::max(0.1, std::atof(argv[++i]));
    else if (a == "--stacks-only")
      stacks_only = true;
    else if (a == "--tick-only")
      tick_only = true;
    else if (a == "--continuous-only")
      continuous_only = true;
    else if (a == "--frames" && i + 1 < argc)
      g_frames = std::clamp(std::atoi(argv[++i]), 1, 60);
    else
      Die("usage: tprof_sampling_bench [--perf PATH] [--reps N] [--seconds S] [--stacks-only | "
          "--tick-only | --continuous-only] [--frames N]");
  }
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) Die("readlink /proc/self/exe");
  self[n] = 0;
  g_self = self;
  if (!g_perf.empty() && g_perf.find('/') == std::string::npos) g_perf = "./" + g_perf;
  if (!g_perf.empty() && ::access(g_perf.c_str(), X_OK) != 0) {
    std::printf("(perf not runnable at %s: perf rows skipped)\n", g_perf.c_str());
    g_perf.clear();
  }
  // The guest runs as root; perf needs no more, but say so explicitly.
  WriteSysctl("/proc/sys/kernel/perf_event_paranoid", "-1");
  WriteSysctl("/proc/sys/kernel/kptr_restrict", "0");

  // Calibrate the fixed amount of work: about target_s unprofiled.
  long chunks = 256;
  double t = 0;
  for (;;) {
    t = RunPlain(chunks).workload_s;
    if (t >= 0.3 || chunks > (1L << 30)) break;
    chunks *= 2;
  }
  chunks = std::max(1L, long(double(chunks) * target_s / t));
  const int cpus = NumCpus();
  const char* stacks_target =
      "  stacks: tprof -g adds no more than perf -g, file at most a tenth of perf.data";
  const char* tick_target =
      "  tick: added per sample at most 0.3x perf's without stacks, 0.7x with -g";
  const char* continuous_target = "  always on: the whole machine's added time under 0.3% at --interval 60";
  if (continuous_only) {
    std::printf("workload: %d processes x %ld chunks (one per CPU)\n", cpus, chunks);
    const bool met = ContinuousSection(chunks, reps);
    std::printf("\ntargets:\n%s: %s\n", continuous_target, met ? "met" : "NOT met");
    return 0;
  }
  if (tick_only) {
    std::printf("workload: %d processes x %ld chunks (one per CPU)\n", cpus, chunks);
    const bool met = TickSection(chunks, reps);
    std::printf("\ntargets:\n%s: %s\n", tick_target,
                g_perf.empty() ? "NOT MEASURED (no perf)" : met ? "met" : "NOT met");
    return 0;
  }
  if (stacks_only) {
    std::printf("workload: %d processes x %ld chunks (one per CPU)\n", cpus, chunks);
    bool met = StackSection(chunks, reps);
    std::printf("\ntargets:\n%s: %s\n", stacks_target,
                g_perf.empty() ? "NOT MEASURED (no perf)" : met ? "met" : "NOT met");
    return 0;
  }

  // ---- 1. slowdown ----------------------------------------------------------
  std::vector<Config> configs = {{"unprofiled", '-', 0, {}},
                                 {"tprofctl record -a --freq 1000", 't', 1000, {}},
                                 {"perf record -F 1000 -a", 'p', 1000, {}},
                                 {"tprofctl record -a --freq 10000", 't', 10000, {}},
                                 {"perf record -F 10000 -a", 'p', 10000, {}}};
  if (g_perf.empty())
    configs.erase(std::remove_if(configs.begin(), configs.end(),
                                 [](const Config& c) { return c.tool == 'p'; }),
                  configs.end());
  RunInterleaved(configs, chunks, reps, 0);

  std::printf("\n1. slowdown: fixed work, %d processes x %ld chunks (one per CPU, %d CPUs), "
              "%d interleaved reps\n",
              cpus, chunks, cpus, reps);
  std::printf("(workload: its own wall time, median; vs none: median of the per-rep ratios to\n"
              " the same rep's unprofiled run, [min-max]; command: the profiler's whole run,\n"
              " start-up, symbolization and perf's build-id pass included; lost: summed over reps)\n");
  PrintSlowdownTable(configs);
  bool slowdown_met = true;
  if (!g_perf.empty()) {
    for (unsigned hz : {1000u, 10000u}) {
      const Config *tp = nullptr, *pf = nullptr;
      for (const Config& c : configs)
        if (c.hz == hz) (c.tool == 't' ? tp : pf) = &c;
      std::vector<double> v = Paired(*tp, *pf);
      double m = Median(v);
      double sa = Median(Paired(*tp, configs[0])) - 1, sb = Median(Paired(*pf, configs[0])) - 1;
      bool ok = m <= 1.0;
      slowdown_met &= ok;
      std::printf("tprof vs perf at %-7s workload time %.3fx [%.2f-%.2f] (overhead %+.1f%% vs "
                  "%+.1f%%): %s\n",
                  Hz(hz).c_str(), m, v.front(), v.back(), 100 * sa, 100 * sb,
                  ok ? "no slower" : "SLOWER than perf");
    }
  }

  // ---- 2. loss sweep ------------------------------------------------------
  std::printf("\n2. loss at default buffers (64 KiB halves per CPU), same workload, one run each\n");
  std::printf("(per CPU/s: samples taken per second per CPU, first to last sample: the rate\n"
              " the guest's clock actually delivered, idle samples included)\n");
  std::printf("%8s %9s %10s %8s %8s %12s %9s\n", "freq", "workload", "taken", "lost", "lost rec",
              "per CPU/s", "file");
  unsigned best = 0;
  double best_delivered = 0;
  bool broke = false;
  uint64_t lost_at_10k = UINT64_MAX;
  for (unsigned hz : {1000u, 2000u, 5000u, 10000u, 20000u, 50000u, 100000u}) {
    Run r = RunTprof(chunks, hz);
    uint64_t lost = r.lost_samples + r.lost_records;
    double per_cpu = r.duration_s > 0 ? double(r.samples) / r.duration_s / cpus : 0;
    std::printf("%8u %8.3fs %10" PRIu64 " %8" PRIu64 " %8" PRIu64 " %12.0f %9s\n", hz,
                r.workload_s, r.samples, r.lost_samples, r.lost_records, per_cpu,
                Bytes(double(r.file_bytes)).c_str());
    if (hz == 10000) lost_at_10k = lost;
    if (lost == 0 && !broke) {
      best = hz;
      best_delivered = std::max(best_delivered, per_cpu);
    }
    else
      broke = true;
  }
  if (best)
    std::printf("highest rate with zero loss (every rate up to it too): %s per CPU configured;\n"
                "highest rate the guest delivered among those runs: %.0f samples/s per CPU\n",
                Hz(best).c_str(), best_delivered);
  else
    std::printf("highest rate with zero loss: none (loss already at 1 kHz)\n");

  // ---- 3. bytes -------------------------------------------------------------
  std::printf("\n3. bytes per second of recording (medians of section 1's runs)\n");
  std::printf("%-30s %10s %12s %14s %14s\n", "run", "samples/s", "file", "file B/s",
              "sample rec B/s");
  for (const Config& c : configs) {
    if (c.tool == '-') continue;
    uint64_t rec = c.tool == 't' ? kTprofSampleBytes : g_perf_sample_bytes;
    double rate = Med(c, [](const Run& r) { return double(r.samples) / r.workload_s; });
    double file = Med(c, [](const Run& r) { return r.file_bytes; });
    double file_rate = Med(c, [](const Run& r) { return double(r.file_bytes) / r.workload_s; });
    std::printf("%-30s %10.0f %12s %12s/s %12s/s\n", c.name.c_str(), rate, Bytes(file).c_str(),
                Bytes(file_rate).c_str(), Bytes(rate * double(rec)).c_str());
  }
  std::printf("(sample records: tprof %" PRIu64 " B each", kTprofSampleBytes);
  if (!g_perf.empty())
    std::printf(", perf %" PRIu64 " B each (sample_type %s)", g_perf_sample_bytes,
                g_perf_sample_type.c_str());
  std::printf(";\n tprof.data holds the aggregated tables, perf.data every record)\n");

  // ---- 4. whole stacks ------------------------------------------------------
  bool stacks_met = StackSection(chunks, reps);

  // ---- 5. the scheduler tick -----------------------------------------------
  const bool tick_met = TickSection(chunks, reps);

  // ---- 6. always on -----------------------------------------------------------
  const bool continuous_met = ContinuousSection(chunks, reps);

  // ---- targets -----------------------------------------------------------------
  std::printf("\ntargets:\n");
  if (g_perf.empty())
    std::printf("  no slower than perf record at equal rate: NOT MEASURED (no perf)\n");
  else
    std::printf("  no slower than perf record at equal rate (1 kHz, 10 kHz): %s\n",
                slowdown_met ? "met" : "NOT met");
  std::printf("  zero loss at 10 kHz per CPU with default buffers: %s\n",
              lost_at_10k == 0 ? "met" : "NOT met");
  std::printf("%s: %s\n", stacks_target,
              g_perf.empty() ? "NOT MEASURED (no perf)" : stacks_met ? "met" : "NOT met");
  std::printf("%s: %s\n", tick_target,
              g_perf.empty() ? "NOT MEASURED (no perf)" : tick_met ? "met" : "NOT met");
  std::printf("%s: %s\n", continuous_target, continuous_met ? "met" : "NOT met");
  return 0;
}
