#include "tprof/analysis/profile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>

#include "analysis/recent_samples.h"
#include "tprof/analysis/elf_snapshot.h"
#include "tprof/analysis/stack_unwinder.h"

namespace tprof {

namespace {

const std::string kNoName;

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};
using ScopedFile = std::unique_ptr<FILE, FileCloser>;

// Copies the record's fixed part out of the buffer: records are 8-byte
// aligned in the kernel's buffers, but a copy is also safe on any input.
template <typename T>
bool LoadRecord(const tprof_rec_header* rec, uint32_t size, T* out) {
  if (size < sizeof(T)) return false;
  std::memcpy(out, rec, sizeof(T));
  return true;
}

std::string FixedString(const char* s, size_t max) { return std::string(s, strnlen(s, max)); }

// Reads a text file line by line (also /proc files, whose size is 0).
template <typename Fn>
Expected<std::monostate> ForEachLine(const std::string& path, Fn&& fn) {
  ScopedFile f(std::fopen(path.c_str(), "re"));
  if (!f) {
    int err = errno;
    return Error::FromErrno(err, "cannot read " + path + ": " + std::strerror(err));
  }
  char* line = nullptr;
  size_t cap = 0;
  ssize_t n;
  while ((n = ::getline(&line, &cap, f.get())) >= 0) {
    std::string_view text(line, static_cast<size_t>(n));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
    fn(text);
  }
  std::free(line);
  return std::monostate{};
}

bool ParseHex(std::string_view token, uint64_t* out) {
  if (token.starts_with("0x") || token.starts_with("0X")) token.remove_prefix(2);
  if (token.empty() || token.size() > 16) return false;
  uint64_t v = 0;
  for (char c : token) {
    int d = (c >= '0' && c <= '9')   ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                     : -1;
    if (d < 0) return false;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  *out = v;
  return true;
}

// Splits off the next token delimited by spaces or tabs.
std::string_view NextToken(std::string_view* rest) {
  size_t b = rest->find_first_not_of(" \t");
  if (b == std::string_view::npos) {
    *rest = {};
    return {};
  }
  rest->remove_prefix(b);
  size_t e = rest->find_first_of(" \t");
  std::string_view tok = rest->substr(0, e);
  rest->remove_prefix(e == std::string_view::npos ? rest->size() : e);
  return tok;
}

}  // namespace

const std::string& ProcessInfo::name() const {
  for (auto it = names.rbegin(); it != names.rend(); ++it)
    if (!it->name.empty()) return it->name;
  return kNoName;
}

const std::string& ProcessInfo::NameAt(uint64_t time_ns) const {
  const std::string* found = nullptr;
  for (const ProcessName& n : names) {
    if (n.name.empty()) continue;
    if (n.time_ns > time_ns && found) break;
    found = &n.name;
    if (n.time_ns > time_ns) break;  // before the first name: take the first
  }
  return found ? *found : kNoName;
}

uint64_t Profile::TotalSamples() const {
  uint64_t total = 0;
  for (const auto& [key, count] : samples) total += count;
  return total;
}

uint64_t Profile::TotalLostSamples() const {
  uint64_t total = 0;
  bool from_control = false;
  for (const auto& [cpu, t] : cpus) {
    if (!t.has_control_totals) continue;
    from_control = true;
    total += t.lost_samples;
  }
  return from_control ? total : lost_samples_in_records;
}

uint64_t Profile::TotalLostRecords() const {
  uint64_t total = 0;
  bool from_control = false;
  for (const auto& [cpu, t] : cpus) {
    if (!t.has_control_totals) continue;
    from_control = true;
    total += t.lost_records;
  }
  return from_control ? total : lost_records_in_records;
}

std::string Profile::ProcessDisplayName(uint32_t pid) const {
  if (pid == 0) return "idle";
  auto it = processes.find(pid);
  if (it == processes.end() || it->second.name().empty()) return "[unknown]";
  return it->second.name();
}

ProfileBuilder::ProfileBuilder() : recent_(std::make_unique<RecentSamples>()) {}
ProfileBuilder::ProfileBuilder(const ContextOptions& context)
    : context_(context), recent_(std::make_unique<RecentSamples>()) {}
// Moving keeps the maps' nodes, so recent_'s pointers stay valid.
ProfileBuilder::ProfileBuilder(ProfileBuilder&&) noexcept = default;
ProfileBuilder& ProfileBuilder::operator=(ProfileBuilder&&) noexcept = default;
ProfileBuilder::~ProfileBuilder() = default;

size_t ProfileBuilder::AddRecord(const tprof_rec_header* rec, size_t avail_bytes) {
  tprof_rec_header hdr{};
  if (rec == nullptr || avail_bytes < sizeof(hdr)) {
    ++profile_.records.malformed;
    return 0;
  }
  std::memcpy(&hdr, rec, sizeof(hdr));
  if (hdr.size < sizeof(hdr) || hdr.size % 8 != 0 || hdr.size > avail_bytes) {
    ++profile_.records.malformed;
    return 0;
  }
  bool ok = true;
  switch (hdr.type) {
    case TPROF_REC_SAMPLE:
      if ((ok = hdr.size >= sizeof(tprof_rec_sample)))
        ok = AddSample(reinterpret_cast<const unsigned char*>(rec), hdr.size);
      break;
    case TPROF_REC_COMM: {
      tprof_rec_comm c;
      if ((ok = LoadRecord(rec, hdr.size, &c))) AddComm(c);
      break;
    }
    case TPROF_REC_EXIT: {
      tprof_rec_exit e;
      if ((ok = LoadRecord(rec, hdr.size, &e))) {
        ++profile_.records.exits;
        ProcessInfo& p = profile_.processes[e.pid];
        p.pid = e.pid;
        p.exited = true;
        p.exit_time_ns = e.time_ns;
        if (e.flags & TPROF_EXIT_SECURE_EXEC) {
          // It exec'd an image the recorder may not see (setuid...): the
          // profile ends there for it. How many did, for the reports.
          std::string& n = profile_.attributes[kLeftAtSetuidExec];
          n = std::to_string((n.empty() ? 0 : std::stoull(n)) + 1);
        }
      }
      break;
    }
    case TPROF_REC_MAP: {
      tprof_rec_map m;
      if ((ok = LoadRecord(rec, hdr.size, &m)))
        AddMap(m, reinterpret_cast<const char*>(rec) + sizeof(m), hdr.size - sizeof(m));
      break;
    }
    case TPROF_REC_LOST: {
      tprof_rec_lost l;
      if ((ok = LoadRecord(rec, hdr.size, &l))) {
        ++profile_.records.losts;
        profile_.lost_samples_in_records += l.lost_samples;
        profile_.lost_records_in_records += l.lost_records;
      }
      break;
    }
    case TPROF_REC_IDLE: {
      tprof_rec_idle i;
      if ((ok = LoadRecord(rec, hdr.size, &i))) {
        profile_.idle_ticks += i.idle_ticks;
        profile_.iowait_ticks += std::min(i.iowait_ticks, i.idle_ticks);
      }
      break;
    }
    default:
      // A newer module's record: its size is trustworthy, so skip it.
      ++profile_.records.unknown;
      break;
  }
  if (!ok) {
    ++profile_.records.malformed;
    return 0;
  }
  return hdr.size;
}

size_t ProfileBuilder::AddRecords(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  size_t off = 0;
  while (off < bytes) {
    size_t n = AddRecord(reinterpret_cast<const tprof_rec_header*>(p + off), bytes - off);
    if (n == 0) break;
    off += n;
  }
  return off;
}

void ProfileBuilder::AddAggregate(uint32_t cpu, const tprof_aggregate_read& read,
                                  const std::vector<tprof_aggregate_entry>& entries) {
  uint64_t total = 0;
  for (const tprof_aggregate_entry& e : entries) {
    if (e.count == 0) continue;
    total += e.count;
    if (e.flags & TPROF_SAMPLE_STACK_KEY) {
      AddCountedStack(e);
      continue;
    }
    const bool user = e.flags & TPROF_SAMPLE_USER;
    profile_.samples[{e.pid, user ? e.space_id : 0, e.ip, e.flags & kSampleKeyFlags}] += e.count;
  }
  if (total == 0) return;
  profile_.cpus[cpu].samples += total;
  profile_.records.samples += total;  // delivered, as the records' samples are
  if (profile_.first_time_ns == 0 || read.start_ns < profile_.first_time_ns)
    profile_.first_time_ns = read.start_ns;
  profile_.last_time_ns = std::max<uint64_t>(profile_.last_time_ns, read.end_ns);
}

void ProfileBuilder::AddCountedStack(const tprof_aggregate_entry& e) {
  auto def = stack_keys_.find(e.ip);
  if (def == stack_keys_.end()) {
    if (auto before = stack_keys_before_.find(e.ip); before != stack_keys_before_.end())
      def = stack_keys_.insert(stack_keys_before_.extract(before)).position;
  }
  const bool user = e.flags & TPROF_SAMPLE_USER;
  SampleKey key{e.pid, user ? e.space_id : 0, 0, e.flags & kSampleKeyFlags};
  if (def == stack_keys_.end()) {
    undefined_stack_key_samples_ += e.count;
    profile_.samples[key] += e.count;
    return;
  }
  const std::vector<unsigned char>& rec = def->second;
  tprof_rec_sample s;
  std::memcpy(&s, rec.data(), sizeof(s));
  key.ip = s.ip;
  uint32_t stack = 0;
  if (s.flags & TPROF_SAMPLE_STACK) (void)AddStack(s, rec.data() + sizeof(s), rec.size() - sizeof(s), &stack);
  profile_.samples[key] += e.count;
  if (stack) profile_.stack_samples[{key, stack}] += e.count;
}

bool ProfileBuilder::AddSample(const unsigned char* rec, uint32_t size) {
  // A stack key's definition: kept for the counts that name it; the sample
  // itself is counted in the module's table unless it is a record too.
  uint32_t flags;
  std::memcpy(&flags, rec + offsetof(tprof_rec_sample, flags), sizeof(flags));
  if (flags & TPROF_SAMPLE_STACK_KEY) {
    uint64_t key;
    std::memcpy(&key, rec + offsetof(tprof_rec_sample, caller), sizeof(key));
    stack_keys_.try_emplace(key, rec, rec + size);
    if (flags & TPROF_SAMPLE_COUNTED) return true;
  }
  if (DeferUntilMapped(rec, size)) return true;
  if (RecentSample* seen = recent_->Find(rec, size, profile_.stacks)) {
    uint64_t time_ns;
    std::memcpy(&time_ns, rec + offsetof(tprof_rec_sample, time_ns), sizeof(time_ns));
    Count(*seen, time_ns);
    return true;
  }
  tprof_rec_sample s;
  std::memcpy(&s, rec, sizeof(s));
  RecentSample e;
  const bool user = s.flags & TPROF_SAMPLE_USER;
  e.key = {s.pid, user ? s.space_id : 0, s.ip, s.flags & kSampleKeyFlags};
  e.tid = s.tid;
  e.cpu = s.cpu;
  e.caller = (s.flags & TPROF_SAMPLE_CALLER) ? s.caller : 0;
  e.sample_count = &profile_.samples[e.key];
  if (e.caller) e.caller_count = &profile_.caller_edges[{e.key, e.caller}];
  e.cpu_count = &profile_.cpus[s.cpu].samples;
  bool ok = true;
  if (s.flags & TPROF_SAMPLE_STACK)
    ok = AddStack(s, rec + sizeof(s), size - sizeof(s), &e.stack);
  if (e.stack) e.stack_count = &profile_.stack_samples[{e.key, e.stack}];
  // A sample whose stack was malformed is still counted, with its context.
  Count(e, s.time_ns);
  if (ok) recent_->Remember(rec, size, e);
  return ok;
}

void ProfileBuilder::Count(RecentSample& e, uint64_t time_ns) {
  ++profile_.records.samples;
  ++*e.sample_count;
  if (e.caller_count) ++*e.caller_count;
  ++*e.cpu_count;
  if (e.stack_count) ++*e.stack_count;
  if (profile_.first_time_ns == 0 || time_ns < profile_.first_time_ns)
    profile_.first_time_ns = time_ns;
  profile_.last_time_ns = std::max<uint64_t>(profile_.last_time_ns, time_ns);
  if (!context_.granularity_ns) return;
  uint64_t bucket = time_ns / CurrentGranularity();
  if (e.context_entry && e.context_bucket == bucket && e.context_epoch == context_epoch_) {
    ++pending_contexts_[e.context_entry - 1].second;
    return;
  }
  // A new (bucket, thread, CPU, sample) for this slot: noted, and looked up
  // in the ordered table only at the next merge, mostly after the
  // recording. An insert there took ~660 instructions, at 1 kHz one for
  // most samples (a 10 ms bucket holds a loop's few addresses once each).
  if (pending_contexts_.size() >= kMaxPendingContexts) {
    MergeContexts();
    bucket = time_ns / CurrentGranularity();  // the merge may have made it coarser
  }
  pending_contexts_.push_back({{bucket, e.cpu, e.tid, e.key, e.stack, e.caller}, 1});
  e.context_entry = pending_contexts_.size();
  e.context_bucket = bucket;
  e.context_epoch = context_epoch_;
}

bool ProfileBuilder::AddStack(const tprof_rec_sample& s, const unsigned char* rest,
                              size_t rest_bytes, uint32_t* id_out) {
  tprof_rec_stack st;
  if (rest_bytes < sizeof(st)) return false;
  std::memcpy(&st, rest, sizeof(st));
  const size_t n = size_t{st.nr_kernel} + st.nr_user;
  if (rest_bytes < sizeof(st) + n * sizeof(uint64_t)) return false;
  // Looked up by a hash of the record's words, compared in place: building
  // a RawStack (two vectors) only to find it again cost ~1,000
  // instructions a sample (bench/sampling_bench, section 4).
  const unsigned char* frames = rest + sizeof(st);
  const unsigned char* user_frames = frames + size_t{st.nr_kernel} * sizeof(uint64_t);
  // A user stack copy: its walk with the mapped files' tables replaces the
  // kernel's frame-pointer walk, when the space's mappings are known.
  UserWalk fresh;
  if (s.flags & TPROF_SAMPLE_USER_STACK) {
    const UserWalk* w = &walk_;
    if (walk_.rest != rest) {  // not walked by DeferUntilMapped
      if (!WalkUserStack(s, rest, rest_bytes, &fresh)) return false;
      w = &fresh;
    }
    if (w->leaf_only) {
      // The user ip (a sample in the kernel) is the first entry; the
      // callers after it are not trusted.
      st.flags &= ~(TPROF_STACK_LEAF_RA | TPROF_STACK_USER_CFI | TPROF_STACK_USER_WHOLE |
                    TPROF_STACK_USER_BY_FP);
      st.flags |= kStackUserLeafOnly;
      st.nr_user = std::min<uint16_t>(st.nr_user, (st.flags & TPROF_STACK_USER_IP) ? 1 : 0);
    } else if (!w->frames.empty()) {
      // The copy's walk, not the module's (cfi: its tables were not loaded yet).
      st.flags &= ~(TPROF_STACK_LEAF_RA | TPROF_STACK_USER_CFI | TPROF_STACK_USER_WHOLE |
                    TPROF_STACK_USER_BY_FP);
      st.flags |= kStackUserByCfi | (w->whole ? kStackUserWhole : 0);
      st.nr_user = static_cast<uint16_t>(w->frames.size());
      user_frames = reinterpret_cast<const unsigned char*>(w->frames.data());
    }
  }
  // The module's walk with loaded tables (--call-graph cfi).
  if ((st.flags & TPROF_STACK_USER_CFI) && !(st.flags & kStackUserByCfi) && st.nr_user)
    st.flags |= kStackUserByCfi | (st.flags & TPROF_STACK_USER_WHOLE ? kStackUserWhole : 0);
  const uint64_t space_id = st.nr_user ? s.space_id : 0;
  const size_t kernel_bytes = size_t{st.nr_kernel} * sizeof(uint64_t);
  const size_t user_bytes = size_t{st.nr_user} * sizeof(uint64_t);
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a over the 8-byte words
  auto mix = [&hash](uint64_t v) { hash = (hash ^ v) * 0x100000001b3ull; };
  mix(st.flags);
  mix(space_id);
  mix(uint64_t{st.nr_kernel} << 32 | st.nr_user);
  for (size_t i = 0; i < st.nr_kernel; i++) {
    uint64_t v;
    std::memcpy(&v, frames + i * sizeof(v), sizeof(v));
    mix(v);
  }
  for (size_t i = 0; i < st.nr_user; i++) {
    uint64_t v;
    std::memcpy(&v, user_frames + i * sizeof(v), sizeof(v));
    mix(v);
  }
  auto same = [&](const RawStack& r) {
    return r.flags == st.flags && r.space_id == space_id && r.kernel.size() == st.nr_kernel &&
           r.user.size() == st.nr_user &&
           (!kernel_bytes || std::memcmp(r.kernel.data(), frames, kernel_bytes) == 0) &&
           (!user_bytes || std::memcmp(r.user.data(), user_frames, user_bytes) == 0);
  };
  uint32_t id = 0;
  for (auto [it, end] = stack_ids_.equal_range(hash); it != end; ++it) {
    if (same(profile_.stacks[it->second - 1])) {
      id = it->second;
      break;
    }
  }
  if (!id) {
    RawStack& raw = profile_.stacks.emplace_back();
    raw.flags = st.flags;
    raw.space_id = space_id;
    raw.kernel.resize(st.nr_kernel);
    raw.user.resize(st.nr_user);
    if (kernel_bytes) std::memcpy(raw.kernel.data(), frames, kernel_bytes);
    if (user_bytes) std::memcpy(raw.user.data(), user_frames, user_bytes);
    id = static_cast<uint32_t>(profile_.stacks.size());
    stack_ids_.emplace(hash, id);
  }
  *id_out = id;
  return true;
}

bool ProfileBuilder::DeferUntilMapped(const unsigned char* rec, uint32_t size) {
  walk_ = UserWalk{};
  tprof_rec_sample s;
  std::memcpy(&s, rec, sizeof(s));
  if (!(s.flags & TPROF_SAMPLE_USER_STACK) || !(s.flags & TPROF_SAMPLE_STACK) || finishing_)
    return false;
  const SpaceKey key{s.pid, s.space_id};
  auto maps = profile_.mappings.find(key);
  const size_t known = maps == profile_.mappings.end() ? 0 : maps->second.size();
  if (known) {
    // Newer mappings than those the waiting samples had: they try again.
    if (auto d = deferred_.find(key); d != deferred_.end() && d->second.maps_seen != known)
      ReplayDeferred(key);
    UserWalk w;
    if (!WalkUserStack(s, rec + sizeof(s), size - sizeof(s), &w)) return false;  // malformed
    if (w.whole || !w.unmapped) {
      walk_ = std::move(w);
      return false;
    }
  }
  // Beyond the bound, counted now with what is known.
  if (deferred_bytes_ + size > kMaxDeferredBytes) return false;
  Deferred& d = deferred_[key];
  d.maps_seen = known;
  d.records.emplace_back(rec, rec + size);
  deferred_bytes_ += size;
  return true;
}

void ProfileBuilder::ReplayDeferred(const SpaceKey& key) {
  auto it = deferred_.find(key);
  if (it == deferred_.end()) return;
  std::vector<std::vector<unsigned char>> recs = std::move(it->second.records);
  deferred_.erase(it);
  for (const auto& r : recs) {
    deferred_bytes_ -= r.size();
    (void)AddSample(r.data(), static_cast<uint32_t>(r.size()));
  }
}

void ProfileBuilder::ShareUnwindTables(std::shared_ptr<UnwindTableCache> tables) {
  unwind_tables_ = std::move(tables);
  unwinder_.reset();
}

bool ProfileBuilder::WalkUserStack(const tprof_rec_sample& s, const unsigned char* rest,
                                   size_t rest_bytes, UserWalk* out) {
  tprof_rec_stack st;
  if (rest_bytes < sizeof(st)) return false;
  std::memcpy(&st, rest, sizeof(st));
  const size_t at = sizeof(st) + (size_t{st.nr_kernel} + st.nr_user) * sizeof(uint64_t);
  tprof_rec_user_stack us;
  if (rest_bytes < at + sizeof(us)) return false;
  std::memcpy(&us, rest + at, sizeof(us));
  if (us.bytes > us.asked || rest_bytes - at - sizeof(us) < us.asked) return false;
  out->rest = rest;
  auto maps = profile_.mappings.find({s.pid, s.space_id});
  if (maps == profile_.mappings.end()) {
    // Not known, and no longer waited for: the module's walk stays only
    // if its tables found every caller.
    out->leaf_only = !(st.flags & TPROF_STACK_USER_CFI) || (st.flags & TPROF_STACK_USER_BY_FP);
    return true;
  }
  if (!unwinder_) unwinder_ = std::make_unique<StackUnwinder>(unwind_tables_);
  // As the kernel's user part: [the user ip, for a sample in the kernel]
  // then the callers, at most the deepest stack the kernel records.
  const bool user_ip = st.flags & TPROF_STACK_USER_IP;
  const unsigned room = TPROF_MAX_STACK_DEPTH - (user_ip ? 1 : 0);
  const bool recorders = s.pid == recorder_pid_ ||
                         (!recorder_program_.empty() &&
                          std::any_of(maps->second.begin(), maps->second.end(),
                                      [&](const Mapping& m) { return m.path == recorder_program_; }));
  StackUnwinder::Walk w =
      unwinder_->Unwind(maps->second, us, rest + at + sizeof(us), room, !recorders);
  out->whole = w.whole;
  out->unmapped = w.unmapped;
  if (w.callers.empty()) return true;
  if (user_ip) out->frames.push_back(us.pc);
  out->frames.insert(out->frames.end(), w.callers.begin(), w.callers.end());
  return true;
}

uint64_t ProfileBuilder::CurrentGranularity() {
  if (profile_.context_granularity_ns == 0) profile_.context_granularity_ns = context_.granularity_ns;
  return profile_.context_granularity_ns;
}

void ProfileBuilder::MergeContexts() {
  if (pending_contexts_.empty()) return;
  for (const auto& [key, count] : pending_contexts_) profile_.contexts[key] += count;
  pending_contexts_.clear();
  ++context_epoch_;  // the entries recent_ points to are gone
  // Coarser buckets merge entries that differ only in time; a table whose
  // keys differ otherwise stops shrinking once everything is in one bucket.
  while (profile_.contexts.size() > context_.max_entries && profile_.contexts.size() > 1) {
    const size_t before = profile_.contexts.size();
    Rebucket(profile_.context_granularity_ns * 2);
    if (profile_.contexts.size() == before && profile_.contexts.begin()->first.bucket ==
                                                  profile_.contexts.rbegin()->first.bucket)
      break;
  }
}

const Profile& ProfileBuilder::profile() {
  MergeContexts();
  return profile_;
}

void ProfileBuilder::Rebucket(uint64_t granularity_ns) {
  MergeContexts();  // pending entries are in the old granularity
  const uint64_t old = profile_.context_granularity_ns;
  std::map<SampleContextKey, uint64_t> merged;
  if (granularity_ns && old) {
    for (const auto& [k, count] : profile_.contexts) {
      SampleContextKey key = k;
      // bucket * old is the bucket's start: exact when granularity_ns is a multiple of old.
      key.bucket = key.bucket * old / granularity_ns;
      merged[key] += count;
    }
  }
  profile_.contexts = std::move(merged);
  profile_.context_granularity_ns = granularity_ns;
  ++context_epoch_;  // the counts recent_ points to are gone
}

void ProfileBuilder::SetContextOptions(const ContextOptions& context) {
  context_ = context;
  if (profile_.context_granularity_ns != 0 || context.granularity_ns == 0)
    Rebucket(context.granularity_ns);
}

void ProfileBuilder::AddComm(const tprof_rec_comm& c) {
  ++profile_.records.comms;
  ProcessInfo& p = profile_.processes[c.pid];
  p.pid = c.pid;
  // A fork of an exited pid is the pid reused by a new process.
  if (c.kind == TPROF_COMM_FORK && p.exited && p.exit_time_ns <= c.time_ns) p.exited = false;
  ProcessName name{c.time_ns, c.kind, c.parent_pid, FixedString(c.comm, sizeof(c.comm))};
  // Buffers are per CPU, so records arrive out of time order: keep history sorted.
  auto pos = std::upper_bound(
      p.names.begin(), p.names.end(), c.time_ns,
      [](uint64_t t, const ProcessName& n) { return t < n.time_ns; });
  p.names.insert(pos, std::move(name));
}

void ProfileBuilder::AddMap(const tprof_rec_map& m, const char* path, size_t path_bytes) {
  ++profile_.records.maps;
  Mapping mapping{m.start, m.end, m.pgoff, std::string(path, strnlen(path, path_bytes))};
  std::vector<Mapping>& list = profile_.mappings[{m.pid, m.space_id}];
  auto pos = std::lower_bound(list.begin(), list.end(), mapping);
  if (pos != list.end() && *pos == mapping) return;  // reported again: same mapping
  list.insert(pos, std::move(mapping));
}

void ProfileBuilder::SetCpuTotals(uint32_t cpu, uint64_t samples_taken, uint64_t lost_samples,
                                  uint64_t lost_records) {
  CpuTotals& t = profile_.cpus[cpu];
  t.has_control_totals = true;
  t.samples_taken = samples_taken;
  t.lost_samples = lost_samples;
  t.lost_records = lost_records;
}

void ProfileBuilder::SetAttribute(const std::string& key, const std::string& value) {
  profile_.attributes[key] = value;
}

Profile ProfileBuilder::Finish() {
  // Samples still waiting for their space's mappings: walked with what is
  // known now (none: the kernel's frames).
  finishing_ = true;
  while (!deferred_.empty()) ReplayDeferred(deferred_.begin()->first);
  finishing_ = false;
  SettleForkNames();
  MergeContexts();
  stack_ids_.clear();
  recent_->Clear();
  if (context_.granularity_ns) CurrentGranularity();  // an empty recording has context too
  return std::exchange(profile_, Profile{});
}

void ProfileBuilder::SettleForkNames() {
  // A fork with an empty comm inherits the parent's name at fork time. A
  // parent may itself be such a fork, hence a few passes.
  for (int pass = 0; pass < 8; ++pass) {
    bool changed = false;
    for (auto& [pid, p] : profile_.processes) {
      for (ProcessName& n : p.names) {
        if (n.kind != TPROF_COMM_FORK || !n.name.empty()) continue;
        auto parent = profile_.processes.find(n.parent_pid);
        if (parent == profile_.processes.end() || parent->first == pid) continue;
        n.name = parent->second.NameAt(n.time_ns);
        changed |= !n.name.empty();
      }
    }
    if (!changed) break;
  }
}

Profile ProfileBuilder::TakeInterval() {
  SettleForkNames();
  MergeContexts();
  Profile out;
  out.attributes = profile_.attributes;
  out.samples = std::exchange(profile_.samples, {});
  out.caller_edges = std::exchange(profile_.caller_edges, {});
  out.stacks = std::exchange(profile_.stacks, {});
  out.stack_samples = std::exchange(profile_.stack_samples, {});
  out.context_granularity_ns = CurrentGranularity();
  out.contexts = std::exchange(profile_.contexts, {});
  for (auto& [cpu, totals] : profile_.cpus) out.cpus[cpu].samples = std::exchange(totals.samples, 0);
  out.lost_samples_in_records = std::exchange(profile_.lost_samples_in_records, 0);
  out.lost_records_in_records = std::exchange(profile_.lost_records_in_records, 0);
  out.idle_ticks = std::exchange(profile_.idle_ticks, 0);
  out.iowait_ticks = std::exchange(profile_.iowait_ticks, 0);
  out.first_time_ns = std::exchange(profile_.first_time_ns, 0);
  out.last_time_ns = std::exchange(profile_.last_time_ns, 0);
  out.records = std::exchange(profile_.records, {});
  // The counts recent_ and the stack ids pointed to went with `out`.
  stack_ids_.clear();
  recent_->Clear();
  stack_keys_before_ = std::exchange(stack_keys_, {});
  ++context_epoch_;
  std::set<uint32_t> sampled;
  for (const auto& [key, count] : out.samples) sampled.insert(key.pid);
  for (uint32_t pid : sampled)
    if (auto p = profile_.processes.find(pid); p != profile_.processes.end())
      out.processes.insert(*p);
  for (const auto& [space, maps] : profile_.mappings)
    if (sampled.count(space.pid)) out.mappings.insert({space, maps});
  // Forget the processes that had exited one interval ago and still have
  // (no fork reused the pid since), with their spaces' mappings; those
  // with samples still waiting for mappings stay until they are counted.
  std::set<uint32_t> gone;
  for (uint32_t pid : exited_at_last_take_)
    if (auto p = profile_.processes.find(pid); p != profile_.processes.end() && p->second.exited)
      gone.insert(pid);
  for (const auto& [space, waiting] : deferred_) gone.erase(space.pid);
  std::erase_if(profile_.processes, [&](const auto& e) { return gone.count(e.first) != 0; });
  std::erase_if(profile_.mappings, [&](const auto& e) { return gone.count(e.first.pid) != 0; });
  exited_at_last_take_.clear();
  for (const auto& [pid, p] : profile_.processes)
    if (p.exited) exited_at_last_take_.push_back(pid);
  return out;
}

namespace {

// counts -= before's, keeping only keys that grew.
template <typename Key>
void SubtractCounts(std::map<Key, uint64_t>* counts, const std::map<Key, uint64_t>& before) {
  for (auto it = counts->begin(); it != counts->end();) {
    auto b = before.find(it->first);
    uint64_t was = b == before.end() ? 0 : b->second;
    if (it->second <= was) {
      it = counts->erase(it);
    } else {
      it->second -= was;
      ++it;
    }
  }
}

uint64_t Less(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

}  // namespace

ProfileCounts CountsOf(const Profile& p) {
  ProfileCounts c;
  c.samples = p.samples;
  c.caller_edges = p.caller_edges;
  c.stack_samples = p.stack_samples;
  c.cpus = p.cpus;
  c.lost_samples_in_records = p.lost_samples_in_records;
  c.lost_records_in_records = p.lost_records_in_records;
  c.idle_ticks = p.idle_ticks;
  c.iowait_ticks = p.iowait_ticks;
  c.record_samples = p.records.samples;
  c.last_time_ns = p.last_time_ns;
  return c;
}

Profile SamplesSince(const Profile& now, const ProfileCounts& before) {
  Profile out = now;
  SubtractCounts(&out.samples, before.samples);
  SubtractCounts(&out.caller_edges, before.caller_edges);
  SubtractCounts(&out.stack_samples, before.stack_samples);  // the stack table stays whole
  out.contexts.clear();  // a live view keeps no context (top): the interval has none
  out.context_granularity_ns = 0;
  for (auto& [cpu, c] : out.cpus) {
    auto b = before.cpus.find(cpu);
    if (b == before.cpus.end()) continue;
    c.samples = Less(c.samples, b->second.samples);
    c.samples_taken = Less(c.samples_taken, b->second.samples_taken);
    c.lost_samples = Less(c.lost_samples, b->second.lost_samples);
    c.lost_records = Less(c.lost_records, b->second.lost_records);
  }
  out.lost_samples_in_records = Less(now.lost_samples_in_records, before.lost_samples_in_records);
  out.lost_records_in_records = Less(now.lost_records_in_records, before.lost_records_in_records);
  out.idle_ticks = Less(now.idle_ticks, before.idle_ticks);
  out.iowait_ticks = Less(now.iowait_ticks, before.iowait_ticks);
  out.records.samples = Less(now.records.samples, before.record_samples);
  if (before.last_time_ns != 0 && out.samples.size() != 0) out.first_time_ns = before.last_time_ns;
  return out;
}

void DropUnsampledProcesses(Profile* profile) {
  std::set<uint32_t> sampled;
  for (const auto& [key, count] : profile->samples) sampled.insert(key.pid);
  std::erase_if(profile->processes, [&](const auto& entry) { return !sampled.count(entry.first); });
}

Expected<KernelSymbols> ReadKallsyms(const std::string& path) {
  KernelSymbols out;
  bool any_nonzero = false;
  auto st = ForEachLine(path, [&](std::string_view line) {
    std::string_view rest = line;
    uint64_t addr = 0;
    std::string_view type = NextToken(&rest);
    if (!ParseHex(type, &addr)) return;
    type = NextToken(&rest);
    std::string_view name = NextToken(&rest);
    if (type.size() != 1 || name.empty() || !std::strchr("tTwW", type[0])) return;
    std::string_view module = NextToken(&rest);
    if (module.size() >= 2 && module.front() == '[' && module.back() == ']')
      module = module.substr(1, module.size() - 2);
    else
      module = {};
    any_nonzero |= addr != 0;
    out.symbols.push_back({addr, type[0], std::string(name), std::string(module)});
  });
  if (!st) return st.error();
  if (!any_nonzero) {
    out.symbols.clear();
    out.note = path + " shows no kernel addresses (run as root, or lower "
                      "kernel.kptr_restrict): kernel functions stay unresolved";
    return out;
  }
  std::sort(out.symbols.begin(), out.symbols.end());
  out.available = true;
  return out;
}

Expected<std::vector<JitSymbol>> ReadPerfMap(const std::string& path) {
  std::vector<JitSymbol> out;
  auto st = ForEachLine(path, [&](std::string_view line) {
    std::string_view rest = line;
    JitSymbol sym;
    if (!ParseHex(NextToken(&rest), &sym.start) || !ParseHex(NextToken(&rest), &sym.size)) return;
    size_t b = rest.find_first_not_of(" \t");
    if (b == std::string_view::npos || sym.size == 0) return;
    sym.name = std::string(rest.substr(b));  // names may contain spaces
    out.push_back(std::move(sym));
  });
  if (!st) return st.error();
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// Keeps the symbols sampled kernel addresses fall in, plus the next symbol,
// which bounds each one (kallsyms has no sizes).
void PruneKernelSymbols(const Profile& profile, KernelSymbols* ksyms) {
  std::set<uint64_t> addresses;
  for (const auto& [key, count] : profile.samples)
    if (!key.user() && key.ip) addresses.insert(key.ip);
  for (const auto& [key, count] : profile.caller_edges)
    if (!key.sample.user()) addresses.insert(key.caller);
  for (const RawStack& stack : profile.stacks)
    for (uint64_t ret : stack.kernel) addresses.insert(ret - 1);  // the call
  const std::vector<KernelSymbol>& all = ksyms->symbols;
  std::set<size_t> keep;
  for (uint64_t addr : addresses) {
    auto it = std::upper_bound(all.begin(), all.end(), addr,
                               [](uint64_t a, const KernelSymbol& s) { return a < s.address; });
    if (it == all.begin()) continue;
    size_t i = static_cast<size_t>(it - all.begin()) - 1;
    keep.insert(i);
    if (i + 1 < all.size()) keep.insert(i + 1);
  }
  std::vector<KernelSymbol> kept;
  kept.reserve(keep.size());
  for (size_t i : keep) kept.push_back(all[i]);
  ksyms->symbols = std::move(kept);
}

}  // namespace

void SnapshotSystemState(Profile* profile, const SnapshotOptions& options) {
  if (options.kernel_symbols) {
    if (auto ksyms = ReadKallsyms(options.kallsyms_path)) {
      profile->kernel_symbols = std::move(*ksyms);
      if (options.prune_kernel_symbols && profile->kernel_symbols.available)
        PruneKernelSymbols(*profile, &profile->kernel_symbols);
    } else {
      profile->kernel_symbols = {};
      profile->kernel_symbols.note = ksyms.error().message() + ": kernel functions stay unresolved";
    }
  }
  std::set<uint32_t> pids;
  for (const auto& [key, count] : profile->samples)
    if (key.user() && key.pid != 0) pids.insert(key.pid);
  for (uint32_t pid : pids) {
    // Most processes have none (ENOENT): not worth a note.
    auto jit = ReadPerfMap(options.perf_map_dir + "/perf-" + std::to_string(pid) + ".map");
    if (jit && !jit->empty()) profile->jit_symbols[pid] = std::move(*jit);
  }
  // The files of the spaces with user samples, by build id now, so that a
  // report can tell a file rebuilt after the recording; and the vDSO.
  std::set<SpaceKey> spaces;
  for (const auto& [key, count] : profile->samples)
    if (key.user() && key.pid != 0) spaces.insert({key.pid, key.space_id});
  bool vdso_mapped = false;
  for (const auto& [key, maps] : profile->mappings) {
    if (!spaces.count(key)) continue;
    for (const Mapping& m : maps) {
      vdso_mapped |= m.path == "[vdso]";
      if (m.path.size() < 2 || m.path[0] != '/' || m.path[1] == '/' ||
          profile->build_ids.count(m.path))
        continue;
      if (std::string id = FileBuildId(m.path); !id.empty()) profile->build_ids[m.path] = id;
    }
  }
  if (options.vdso && vdso_mapped) profile->vdso_image = VdsoImage();
}

}  // namespace tprof
