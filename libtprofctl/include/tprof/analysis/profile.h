// A system-wide sampling profile (docs/design.md, "Sampling"): the tables the raw records of
// the sampling buffers are reduced to while they arrive, so memory grows
// with distinct addresses, not with samples. ProfileBuilder does the
// reduction; Profile is what reports read and what the profile file stores
// (profile_file.h). SnapshotSystemState() adds what must be copied at stop
// time because it may be gone later: the kernel symbols and JIT perf maps.
#ifndef TPROF_PROFILE_H_
#define TPROF_PROFILE_H_

#include <linux/tprof.h>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tprof/base/expected.h"
#include "tprof/device/windows.h"

namespace tprof {

// The TPROF_SAMPLE_* bits a sample is keyed by (CALLER only says whether
// the caller field is valid, so it is not part of the key).
inline constexpr uint32_t kSampleKeyFlags =
    TPROF_SAMPLE_USER | TPROF_SAMPLE_IDLE | TPROF_SAMPLE_HIDDEN;

// One distinct sampled instruction. Kernel samples have space_id 0: kernel
// addresses mean the same in every address space.
struct SampleKey {
  uint32_t pid = 0;
  uint64_t space_id = 0;
  uint64_t ip = 0;
  uint32_t flags = 0;  // TPROF_SAMPLE_* & kSampleKeyFlags

  bool user() const { return flags & TPROF_SAMPLE_USER; }
  bool idle() const { return pid == 0 || (flags & TPROF_SAMPLE_IDLE); }
  auto operator<=>(const SampleKey&) const = default;
};

// One caller -> callee edge (caller = return address into the caller),
// for folded stacks. Its counts are a subset of the sample's count.
struct CallerKey {
  SampleKey sample;
  uint64_t caller = 0;
  auto operator<=>(const CallerKey&) const = default;
};

// One entry of the stack table: a sample's struct tprof_rec_stack as
// recorded (see the uapi header), interned so that a file holds each
// distinct stack once. space_id is the space of the user entries (also
// for a kernel-mode sample, whose SampleKey has space 0). Which entries
// are frames is decided when reading (ExpandStack, stacks.h).
// RawStack::flags beside the module's TPROF_STACK_* (bits 0-15): how the
// recorder found the user part.
// Walked with the binaries' CFI: from a user stack copy (--call-graph
// dwarf), or by the module with loaded tables (cfi, TPROF_STACK_USER_CFI).
inline constexpr uint32_t kStackUserByCfi = 1u << 16;
// ... up to the outermost frame: the whole stack.
inline constexpr uint32_t kStackUserWhole = 1u << 17;
// A user stack copy of a space whose mappings never came (their MAP
// records were lost): the module's frame-pointer callers may be data read
// through frameless code, so only the leaf (the user ip) is kept.
inline constexpr uint32_t kStackUserLeafOnly = 1u << 18;

// The attribute that says each sample copied this many bytes of its user
// stack (record --call-graph dwarf).
inline constexpr char kUserStackBytes[] = "user_stack_bytes";
// record --call-graph cfi: the unwind tables the recorder loaded into the
// module (count, bytes of rows), how many of the tables it built from CFI
// (the rest it read from the store of earlier recordings), the files
// samples went through that have none, and the module's refusals
// ("N (first: message)").
inline constexpr char kUnwindTables[] = "unwind_tables";
inline constexpr char kUnwindTablesBuilt[] = "unwind_tables_built";
inline constexpr char kUnwindTableBytes[] = "unwind_table_bytes";
inline constexpr char kUnwindFilesWithout[] = "unwind_files_without";
inline constexpr char kUnwindFailures[] = "unwind_failures";

struct RawStack {
  uint32_t flags = 0;  // TPROF_STACK_*, kStackUser*
  uint64_t space_id = 0;
  std::vector<uint64_t> kernel;  // return addresses, innermost first
  std::vector<uint64_t> user;    // [user ip] [leaf's return address] chain
  auto operator<=>(const RawStack&) const = default;
};

// Samples of one sampled instruction with one stack (1-based stack id).
struct StackSampleKey {
  SampleKey sample;
  uint32_t stack = 0;
  auto operator<=>(const StackSampleKey&) const = default;
};

// The context of samples (profile format 1.2): which thread, CPU and time
// bucket (time_ns / Profile::context_granularity_ns, on the sampling
// clock) took them, with the stack (1-based id, 0: none) and caller (0:
// none) they carried. Counts per key add up to `samples`; the aggregates
// beside it are what reports read, and FilterProfile (sample_filter.h)
// rebuilds them from a selection of these. Ordered by time first.
struct SampleContextKey {
  uint64_t bucket = 0;
  uint32_t cpu = 0;
  uint32_t tid = 0;
  SampleKey sample;
  uint32_t stack = 0;
  uint64_t caller = 0;
  auto operator<=>(const SampleContextKey&) const = default;
};

// The default time granularity of the context table: at the default 1 kHz
// a CPU's bucket holds at most 10 samples, so `--time` cuts a recording
// to within 1% of a second while a tight loop's few addresses per bucket
// keep the file near the aggregates' size.
inline constexpr uint64_t kDefaultContextGranularityNs = 10'000'000;
// The context table's bound: past it the builder doubles the granularity
// (merging pairs of buckets) until it fits again; memory is bounded by
// this or by the distinct (sample, stack, caller, tid, cpu) keys.
inline constexpr size_t kDefaultMaxContextEntries = size_t{1} << 19;

struct ProcessName {
  uint64_t time_ns = 0;
  uint32_t kind = TPROF_COMM_EXISTING;  // TPROF_COMM_*
  uint32_t parent_pid = 0;              // for TPROF_COMM_FORK
  std::string name;
  bool operator==(const ProcessName&) const = default;
};

struct ProcessInfo {
  uint32_t pid = 0;
  std::vector<ProcessName> names;  // oldest first (by time_ns)
  bool exited = false;
  uint64_t exit_time_ns = 0;

  // The latest name, or "" if none is known.
  const std::string& name() const;
  // The name the process had at time_ns (the first one if earlier).
  const std::string& NameAt(uint64_t time_ns) const;
  bool operator==(const ProcessInfo&) const = default;
};

// An executable file mapping of an address space (TPROF_REC_MAP).
struct Mapping {
  uint64_t start = 0;  // [start, end)
  uint64_t end = 0;
  uint64_t pgoff = 0;  // file offset of start
  std::string path;    // a file, or a pseudo name such as "[vdso]"
  auto operator<=>(const Mapping&) const = default;
};

struct SpaceKey {
  uint32_t pid = 0;
  uint64_t space_id = 0;
  auto operator<=>(const SpaceKey&) const = default;
};

struct CpuTotals {
  uint64_t samples = 0;         // samples delivered in records
  bool has_control_totals = false;  // SetCpuTotals() was called
  uint64_t samples_taken = 0;   // from the control area at stop
  uint64_t lost_samples = 0;
  uint64_t lost_records = 0;
  bool operator==(const CpuTotals&) const = default;
};

// A /proc/kallsyms text symbol; sizes are implied by the next symbol.
struct KernelSymbol {
  uint64_t address = 0;
  char type = 't';
  std::string name;
  std::string module;  // "" for the kernel image, else the "[module]" column
  auto operator<=>(const KernelSymbol&) const = default;
};

struct KernelSymbols {
  // false: not captured, or the addresses were hidden (an unprivileged
  // reader sees zeros, see kptr_restrict); kernel samples stay unresolved.
  bool available = false;
  std::string note;                   // why not available
  std::vector<KernelSymbol> symbols;  // sorted by address
  bool operator==(const KernelSymbols&) const = default;
};

// A /tmp/perf-<pid>.map line: JIT code at [start, start + size).
struct JitSymbol {
  uint64_t start = 0;
  uint64_t size = 0;
  std::string name;
  auto operator<=>(const JitSymbol&) const = default;
};

// Record accounting: what arrived and what was rejected.
struct RecordStats {
  uint64_t samples = 0, comms = 0, exits = 0, maps = 0, losts = 0;
  uint64_t unknown = 0;    // well-formed records of an unknown type: skipped
  uint64_t malformed = 0;  // bad size: skipped (and the rest of that buffer)
  bool operator==(const RecordStats&) const = default;
};

// Profile::attributes key: how many sampled processes left the profile at
// an exec into an image the recorder may not see (TPROF_EXIT_SECURE_EXEC).
inline constexpr char kLeftAtSetuidExec[] = "left_at_setuid_exec";
// Profile::attributes key: the recorder's own pid, in a recording of every
// process (which samples the recorder too; reports say how much).
inline constexpr char kRecorderPid[] = "recorder_pid";
// Profile::attributes key: "tick" where the samples were taken in the
// kernel's scheduler tick (TPROF_SAMPLE_ON_TICK; frequency_hz is HZ).
inline constexpr char kSamplingClock[] = "clock";
// Profile::attributes keys: counted in the module (TPROF_SAMPLING_AGGREGATE):
// entries per CPU table, and the samples that found no room in one and
// came as records instead.
inline constexpr char kAggregateSlots[] = "aggregate_slots";
inline constexpr char kAggregateOverflowed[] = "aggregate_overflowed";
// With -g: samples counted under a stack key no record defined (0 unless
// the reader is wrong; counted at ip 0 without a stack).
inline constexpr char kAggregateUndefinedStacks[] = "aggregate_undefined_stacks";
// Profile::attributes keys: perf's limit on sampling,
// kernel.perf_event_max_sample_rate, when the recording started and
// ended. perf throttles every counter above it and lowers it when sample
// handlers take too long (report.h: ThrottleWarning).
inline constexpr char kPerfMaxRateAtStart[] = "perf_max_sample_rate_at_start";
inline constexpr char kPerfMaxRateAtEnd[] = "perf_max_sample_rate_at_end";

struct Profile {
  // Free-form facts the recorder adds (kernel_release, frequency_hz,
  // command...), stored and shown as they are.
  std::map<std::string, std::string> attributes;
  std::map<SampleKey, uint64_t> samples;
  std::map<CallerKey, uint64_t> caller_edges;
  // The stack table (id i + 1 is stacks[i]) and the samples that carried
  // a stack, a subset of `samples` (ABI 1.8, TPROF_SAMPLING_STACKS).
  std::vector<RawStack> stacks;
  std::map<StackSampleKey, uint64_t> stack_samples;
  // Per-sample context (format 1.2); granularity 0: none kept (a 1.1
  // file, or recorded without), and `contexts` is empty.
  uint64_t context_granularity_ns = 0;
  std::map<SampleContextKey, uint64_t> contexts;
  std::map<uint32_t, ProcessInfo> processes;
  std::map<SpaceKey, std::vector<Mapping>> mappings;  // sorted by start
  std::map<uint32_t, CpuTotals> cpus;
  uint64_t lost_samples_in_records = 0;  // sums of TPROF_REC_LOST
  uint64_t lost_records_in_records = 0;
  // Tick sampling (TPROF_REC_IDLE): the ticks idle CPUs skipped with their
  // tick stopped, and how many of those had a task waiting for I/O. Not
  // in `samples`: no task was interrupted.
  uint64_t idle_ticks = 0, iowait_ticks = 0;
  uint64_t first_time_ns = 0, last_time_ns = 0;  // of samples; 0 if none
  RecordStats records;
  KernelSymbols kernel_symbols;
  std::map<uint32_t, std::vector<JitSymbol>> jit_symbols;  // by pid, sorted
  // The kernel's vDSO image ("[vdso]" is no file: the same image is mapped
  // into every process of one kernel), copied from the recorder's own
  // process at snapshot; "" if none was taken.
  std::string vdso_image;
  // Each sampled file mapping's GNU build id (hex) as the file on disk had
  // it at snapshot: a file rebuilt later is told apart.
  std::map<std::string, std::string> build_ids;  // path -> hex
  // The session's counting windows, read when the recording stopped.
  std::vector<WindowCounts> windows;

  // Samples delivered (the sum of `samples`).
  uint64_t TotalSamples() const;
  // Lost samples/records: the control-area totals when the recorder gave
  // them (exact, also for losses no TPROF_REC_LOST reported), else the
  // sums of the TPROF_REC_LOST records.
  uint64_t TotalLostSamples() const;
  uint64_t TotalLostRecords() const;
  // The name of a pid for reports: its latest name, "idle" for pid 0,
  // "[unknown]" if no TPROF_REC_COMM named it.
  std::string ProcessDisplayName(uint32_t pid) const;

  bool operator==(const Profile&) const = default;
};

struct ContextOptions {
  // Time bucket of the context table; 0 keeps no context.
  uint64_t granularity_ns = kDefaultContextGranularityNs;
  size_t max_entries = kDefaultMaxContextEntries;
};

struct RecentSample;
class RecentSamples;
class StackUnwinder;
class UnwindTableCache;

class ProfileBuilder {
 public:
  ProfileBuilder();
  explicit ProfileBuilder(const ContextOptions& context);
  ProfileBuilder(ProfileBuilder&&) noexcept;
  ProfileBuilder& operator=(ProfileBuilder&&) noexcept;
  ~ProfileBuilder();

  // Changes the context's granularity (before the first record, normally):
  // entries already kept move to bucket time / new granularity; 0 drops them.
  void SetContextOptions(const ContextOptions& context);
  // Reduces one record. avail_bytes: bytes readable at rec (the rest of the
  // buffer). Returns the record's size to step to the next one, or 0 if the
  // record is malformed (size < header, not a multiple of 8, > avail_bytes,
  // or < the size of its type's struct): it is counted and the caller must
  // stop walking that buffer. Unknown types are counted and skipped.
  size_t AddRecord(const tprof_rec_header* rec, size_t avail_bytes);
  // Walks a buffer of records (a published half); stops at the first
  // malformed one. Returns the bytes consumed.
  size_t AddRecords(const void* data, size_t bytes);
  // Counts the module kept on one CPU (TPROF_SAMPLING_AGGREGATE, one
  // AGGREGATE_READ): each entry as `count` samples of its address, or of
  // the ip and stack its key's record defined (TPROF_SAMPLE_STACK_KEY:
  // that record must have been added first), with no thread or time
  // finer than the read's span (no context).
  void AddAggregate(uint32_t cpu, const tprof_aggregate_read& read,
                    const std::vector<tprof_aggregate_entry>& entries);
  // Samples counted under a stack key no record had defined (a reader that
  // took a table before reading the buffers): counted at ip 0, no stack.
  uint64_t undefined_stack_key_samples() const { return undefined_stack_key_samples_; }
  // A CPU's totals from its struct tprof_buffer_ctl, read at stop.
  void SetCpuTotals(uint32_t cpu, uint64_t samples_taken, uint64_t lost_samples,
                    uint64_t lost_records);
  void SetAttribute(const std::string& key, const std::string& value);
  // The tables the stack copies are walked with, shared with the recorder
  // that loads them into the module (before the first record).
  void ShareUnwindTables(std::shared_ptr<UnwindTableCache> tables);
  // The recorder's own pid (in the records' namespace) and program: the
  // stack copies of its process, and of any space that maps its program
  // (its forked child before it execs the command), are walked only with
  // tables built already. Building the tables of its own libraries would
  // take the time it needs to drain the buffers, for stacks nobody asked
  // for.
  void SetRecorder(uint32_t pid, std::string program) {
    recorder_pid_ = pid;
    recorder_program_ = std::move(program);
  }

  // The profile so far (its context table brought up to date first).
  const Profile& profile();
  // Completes what needs every record (names of forks whose comm was
  // empty, mapping order) and hands the profile over; the builder is empty
  // afterwards.
  Profile Finish();
  // Hands over what was counted since the last call (or the start): the
  // samples, their stacks, context and losses, with the names and
  // mappings of the processes sampled. The builder keeps the names and
  // mappings and forgets the rest, and the processes that had exited at
  // the previous call (a late sample of one, from another CPU's buffer,
  // still finds its name): a recording that never ends (record
  // --continuous) holds one interval's stacks and the live processes,
  // not the whole run's. Control-area totals are Finish()'s.
  Profile TakeInterval();

 private:
  // A sample record of `size` bytes (at least a struct tprof_rec_sample);
  // false if its stack is malformed (the sample is counted all the same).
  bool AddSample(const unsigned char* rec, uint32_t size);
  // Adds one sample to the counts `counted` points to (recent_samples.h).
  void Count(RecentSample& counted, uint64_t time_ns);
  void AddComm(const tprof_rec_comm& c);
  void AddMap(const tprof_rec_map& m, const char* path, size_t path_bytes);
  // `count` samples of a counted stack key, as its defining record's.
  void AddCountedStack(const tprof_aggregate_entry& e);
  // Interns the stack after a sample; false if it does not fit the record.
  bool AddStack(const tprof_rec_sample& s, const unsigned char* rest, size_t rest_bytes,
                uint32_t* id_out);
  // A sample with a user stack copy waits, a copy of its record, for its
  // space's mappings: the kernel reports them a moment after the space's
  // first sample and again after each change, often in another CPU's
  // buffer, published later. It waits while none are known, or while its
  // walk reaches an address none covers (a library not reported yet),
  // until newer ones come or Finish(). True if it waits.
  bool DeferUntilMapped(const unsigned char* rec, uint32_t size);
  // Adds the samples of `key` that waited (those still short wait again).
  void ReplayDeferred(const SpaceKey& key);
  // The user part a sample's stack copy gives (the record after the
  // sample: `rest`), walked with the tables of the files its space maps.
  struct UserWalk {
    const unsigned char* rest = nullptr;  // the record it is of
    std::vector<uint64_t> frames;         // empty: not walked
    bool whole = false;
    bool unmapped = false;
    bool leaf_only = false;  // no mappings: the kernel's user part cut to its leaf
  };
  // False if the stack part is malformed.
  bool WalkUserStack(const tprof_rec_sample& s, const unsigned char* rest, size_t rest_bytes,
                     UserWalk* out);
  // The profile's granularity, set from the options at the first use.
  uint64_t CurrentGranularity();

  // Names forks whose comm was empty after their parent.
  void SettleForkNames();
  // Adds the pending contexts to Profile::contexts, then doubles the
  // granularity until the table holds at most max_entries.
  void MergeContexts();
  void Rebucket(uint64_t granularity_ns);

  Profile profile_;
  // Stack-table ids by a hash of the stack (see AddStack).
  std::unordered_multimap<uint64_t, uint32_t> stack_ids_;
  ContextOptions context_;
  // Recent records and where their counts are; the epoch counts the
  // merges of the pending contexts, which empty the list slots point into.
  std::unique_ptr<RecentSamples> recent_;
  // Walks the user stack copies (TPROF_SAMPLE_USER_STACK); made at the first.
  std::unique_ptr<StackUnwinder> unwinder_;
  std::shared_ptr<UnwindTableCache> unwind_tables_;  // null: the unwinder's own
  std::optional<uint32_t> recorder_pid_;
  std::string recorder_program_;
  struct Deferred {
    size_t maps_seen = 0;  // the space's mappings when they began to wait
    std::vector<std::vector<unsigned char>> records;
  };
  std::map<SpaceKey, Deferred> deferred_;
  size_t deferred_bytes_ = 0;
  bool finishing_ = false;  // Finish(): walk with what is known
  UserWalk walk_;           // DeferUntilMapped's walk, for AddStack
  static constexpr size_t kMaxDeferredBytes = size_t{64} << 20;
  uint64_t context_epoch_ = 0;
  // Contexts counted since the last merge, in the order first seen (a key
  // may be here more than once): appending is what a sample costs while
  // recording; the ordered table's lookups wait for MergeContexts(), which
  // runs when this is full, for profile(), for Rebucket() and in Finish().
  static constexpr size_t kMaxPendingContexts = size_t{1} << 16;
  std::vector<std::pair<SampleContextKey, uint64_t>> pending_contexts_;
  // The processes that had exited at the last TakeInterval().
  std::vector<uint32_t> exited_at_last_take_;
  // Stack keys' defining records (TPROF_SAMPLE_STACK_KEY), read since the
  // last TakeInterval() and in the interval before it: the module defines
  // a key again in each table it fills, so older ones are never needed.
  std::unordered_map<uint64_t, std::vector<unsigned char>> stack_keys_, stack_keys_before_;
  uint64_t undefined_stack_key_samples_ = 0;
};

// Drops the processes no sample belongs to (their `process` and `name`
// lines): every process that existed at start has a record, and on a
// machine's worth of idle daemons and kernel threads those were a fifth of
// a short recording's file. Reports read only sampled processes; fork
// names are settled by ProfileBuilder::Finish() before. Recorder::Finish()
// calls it.
void DropUnsampledProcesses(Profile* profile);

// Reads the text symbols (types t/T/w/W) of a kallsyms file. All-zero
// addresses (an unprivileged reader) give available = false with a note.
Expected<KernelSymbols> ReadKallsyms(const std::string& path = "/proc/kallsyms");
// Reads a perf map ("START SIZE name" per line, hex numbers); bad lines
// are skipped. Sorted by start.
Expected<std::vector<JitSymbol>> ReadPerfMap(const std::string& path);

struct SnapshotOptions {
  // false: the profile's kernel symbols are left as they are (a recorder
  // that read them once, at start, for every interval).
  bool kernel_symbols = true;
  std::string kallsyms_path = "/proc/kallsyms";
  std::string perf_map_dir = "/tmp";  // holds perf-<pid>.map
  // Keep only the kernel symbols that sampled addresses fall in (and the
  // symbol after each, which bounds it): the file stays small.
  bool prune_kernel_symbols = true;
  // Copy this process's vDSO (getauxval(AT_SYSINFO_EHDR)) when a sampled
  // space maps "[vdso]".
  bool vdso = true;
};

// The counts of a running recording at one moment, what SamplesSince
// subtracts: a live view keeps these between refreshes, not a copy of the
// whole profile with its stack table, names and mappings.
struct ProfileCounts {
  std::map<SampleKey, uint64_t> samples;
  std::map<CallerKey, uint64_t> caller_edges;
  std::map<StackSampleKey, uint64_t> stack_samples;
  std::map<uint32_t, CpuTotals> cpus;
  uint64_t lost_samples_in_records = 0, lost_records_in_records = 0;
  uint64_t idle_ticks = 0, iowait_ticks = 0;
  uint64_t record_samples = 0;  // records.samples
  uint64_t last_time_ns = 0;
};
[[nodiscard]] ProfileCounts CountsOf(const Profile& profile);

// What a running recording added since an earlier moment (a live view's
// last interval, tprofctl top): `now` with every count less `before`'s
// (rows that did not move are dropped); the tables (processes, mappings,
// stacks, symbols, attributes) as in `now`; no per-sample context.
[[nodiscard]] Profile SamplesSince(const Profile& now, const ProfileCounts& before);

// At stop: copies the kernel symbols and the perf map of every sampled
// pid into the profile, the build ids of the files mapped in sampled
// spaces, and the vDSO image when a sampled space maps "[vdso]". Never fails: what cannot be read is noted
// (kernel_symbols.note) and left out.
void SnapshotSystemState(Profile* profile, const SnapshotOptions& options = {});

}  // namespace tprof

#endif  // TPROF_PROFILE_H_
