#include "tprof/analysis/profile_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include <zlib.h>

#include "analysis/profile_file_stacks.h"
#include "analysis/profile_lines.h"
#include "base/base64.h"
#include "tprof/base/gzip.h"
#include "tprof/base/output_file.h"
#include "tprof/base/scoped_fd.h"

namespace tprof {

namespace {

constexpr char kMagic[] = "tprof-profile";
// The largest vDSO image a file may carry (VdsoImage()'s own bound).
constexpr size_t kMaxVdsoBytes = size_t{1} << 20;

Error BadFile(const std::string& name, const std::string& what) {
  return Error::FromErrno(EBADMSG, name + ": " + what);
}

// The start of a line for an error message, safe for a terminal: bytes
// outside printable ASCII as \xNN, at most 80 of the line's bytes.
std::string Excerpt(std::string_view line) {
  std::string out;
  for (unsigned char c : line.substr(0, 80)) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  if (line.size() > 80) out += "...";
  return out;
}

// zlib's CRC-32 of the bytes before a file's `crc32` line.
uint32_t Crc32(std::string_view bytes) {
  return static_cast<uint32_t>(
      ::crc32_z(0L, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

std::string Crc32Hex(uint32_t crc) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08x", crc);
  return buf;
}

// What `ctx` lines refer to: the `csite` lines read so far (id i + 1).
struct ContextSite {
  SampleKey sample;
  uint32_t stack = 0;
  uint64_t caller = 0;
};

// What the lines read so far say to the next ones.
struct ParseState {
  std::vector<ContextSite> sites;  // the `csite` lines, and the implicit ones
  StackLinesState stacks;          // 1.8's stack tables
  uint64_t last_ksym = 0;          // the last `ks` line's address
};

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Applies one line of a known kind; false if a field is malformed.
bool ParseLine(LineReader& r, Profile* p, ParseState* state) {
  std::vector<ContextSite>* sites = &state->sites;
  std::string_view tag = r.tag();
  if (LineResult stack = ParseStackLine(r, p, &state->stacks); stack != LineResult::kNotMine)
    return stack == LineResult::kOk;
  if (tag == "attr") {
    std::string key = r.Str(1);
    p->attributes[key] = r.Str(2);
  } else if (tag == "time") {
    p->first_time_ns = r.Dec(1);
    p->last_time_ns = r.Dec(2);
  } else if (tag == "lost") {
    p->lost_samples_in_records = r.Dec(1);
    p->lost_records_in_records = r.Dec(2);
  } else if (tag == "idle") {
    p->idle_ticks = r.Dec(1);
    p->iowait_ticks = r.Dec(2);
  } else if (tag == "records") {
    RecordStats& s = p->records;
    s = {r.Dec(1), r.Dec(2), r.Dec(3), r.Dec(4), r.Dec(5), r.Dec(6), r.Dec(7)};
  } else if (tag == "cpu") {
    CpuTotals& c = p->cpus[r.Dec32(1)];
    c = {r.Dec(2), r.Dec(3) != 0, r.Dec(4), r.Dec(5), r.Dec(6)};
  } else if (tag == "process") {
    uint32_t pid = r.Dec32(1);
    ProcessInfo& proc = p->processes[pid];
    proc.pid = pid;
    proc.exited = r.Dec(2) != 0;
    proc.exit_time_ns = r.Dec(3);
  } else if (tag == "name") {
    uint32_t pid = r.Dec32(1);
    ProcessInfo& proc = p->processes[pid];
    proc.pid = pid;
    ProcessName n;
    n.time_ns = r.Dec(2);
    n.kind = r.Dec32(3);
    n.parent_pid = r.Dec32(4);
    n.name = r.Str(5);
    proc.names.push_back(std::move(n));
  } else if (tag == "map") {
    SpaceKey key{r.Dec32(1), r.Hex(2)};
    p->mappings[key].push_back({r.Hex(3), r.Hex(4), r.Hex(5), r.Str(6)});
  } else if (tag == "sample") {
    SampleKey key{r.Dec32(1), r.Hex(2), r.Hex(3), static_cast<uint32_t>(r.Hex(4))};
    p->samples[key] += r.Dec(5);
  } else if (tag == "edge") {
    CallerKey key{{r.Dec32(1), r.Hex(2), r.Hex(3), static_cast<uint32_t>(r.Hex(4))}, r.Hex(5)};
    p->caller_edges[key] += r.Dec(6);
  } else if (tag == "stack") {
    const uint64_t id = r.Dec(1);
    RawStack st;
    st.flags = static_cast<uint32_t>(r.Hex(2));
    st.space_id = r.Hex(3);
    const uint64_t nk = r.Dec(4), nu = r.Dec(5);
    // Ids come in order; the bounds keep a corrupt line from allocating much.
    if (!r.ok() || id != p->stacks.size() + 1 || nk + nu > 4 * (TPROF_MAX_STACK_DEPTH + 2))
      return false;
    for (uint64_t i = 0; i < nk + nu; ++i) (i < nk ? st.kernel : st.user).push_back(r.Hex(6 + i));
    p->stacks.push_back(std::move(st));
  } else if (tag == "ssample") {
    StackSampleKey key{{r.Dec32(1), r.Hex(2), r.Hex(3), static_cast<uint32_t>(r.Hex(4))},
                       r.Dec32(5)};
    if (key.stack == 0 || key.stack > p->stacks.size()) return false;
    p->stack_samples[key] += r.Dec(6);
  } else if (tag == "context") {
    p->context_granularity_ns = r.Dec(1);
    // 1.7 (a second field, 1): the ssample lines, then the sample lines
    // (all before this line), in order, are the first sites; csite lines
    // number only the others.
    if (r.size() > 2 && r.Dec(2) == 1 && sites->empty()) {
      for (const auto& [k, count] : p->stack_samples) sites->push_back({k.sample, k.stack, 0});
      for (const auto& [k, count] : p->samples) sites->push_back({k, 0, 0});
    }
  } else if (tag == "csite") {
    const uint64_t id = r.Dec(1);
    ContextSite site{{r.Dec32(2), r.Hex(3), r.Hex(4), static_cast<uint32_t>(r.Hex(5))},
                     r.Dec32(6), r.Hex(7)};
    if (!r.ok() || id != sites->size() + 1 || site.stack > p->stacks.size()) return false;
    sites->push_back(site);
  } else if (tag == "ctx" || tag == "cx") {
    // cx (1.8): each SITE is the distance from the one before (from 0).
    const bool delta = tag == "cx";
    const uint64_t bucket = r.Dec(1);
    const uint32_t cpu = r.Dec32(2), tid = r.Dec32(3);
    uint64_t last = 0;
    for (size_t i = 4; r.ok() && i < r.size(); ++i) {
      uint64_t id = 0, count = 0;
      if (!r.Pair(i, &id, &count)) return false;
      if (delta) last = id += last;
      if (id == 0 || id > sites->size() || count == 0) return false;
      const ContextSite& site = (*sites)[id - 1];
      p->contexts[{bucket, cpu, tid, site.sample, site.stack, site.caller}] += count;
    }
  } else if (tag == "kernel-symbols") {
    p->kernel_symbols.available = r.Dec(1) != 0;
    p->kernel_symbols.note = r.Str(2);
  } else if (tag == "ksym" || tag == "ks") {
    // ks (1.8): ADDR is the distance from the last ks line's.
    uint64_t addr = r.Hex(1);
    if (tag == "ks") addr = state->last_ksym += addr;
    std::string type = r.Str(2);
    if (type.size() != 1) return false;
    p->kernel_symbols.symbols.push_back({addr, type[0], r.Str(3), r.Str(4)});
  } else if (tag == "jit") {
    uint32_t pid = r.Dec32(1);
    p->jit_symbols[pid].push_back({r.Hex(2), r.Hex(3), r.Str(4)});
  } else if (tag == "buildid") {
    std::string path = r.Str(1);
    p->build_ids[path] = r.Str(2);
  } else if (tag == "vdso") {
    std::string hex = r.Str(1);
    if (hex.size() % 2 != 0) return false;
    p->vdso_image.clear();
    for (size_t i = 0; i < hex.size(); i += 2) {
      int hi = HexDigit(hex[i]), lo = HexDigit(hex[i + 1]);
      if (hi < 0 || lo < 0) return false;
      p->vdso_image.push_back(static_cast<char>(hi * 16 + lo));
    }
  } else if (tag == "window") {
    WindowCounts w;
    tprof_window_info& i = w.info;
    i.id = r.Dec32(1);
    i.kind = r.Dec32(2);
    i.pid = r.Dec32(3);
    i.flags = r.Dec32(4);
    i.start = r.Hex(5);
    i.length = r.Dec(6);
    i.block_bytes = r.Dec32(7);
    i.scale = r.Dec32(8);
    i.nr_cells = r.Dec(9);
    i.cell_bytes = r.Dec32(10);
    i.nr_procs = r.Dec32(11);
    i.in_range = r.Dec(12);
    i.out_of_range = r.Dec(13);
    i.wait = r.Dec(14);
    i.untracked_forks = r.Dec(15);
    if (!r.ok() || i.nr_cells > TPROF_WINDOW_MAX_CELLS) return false;
    w.cells.assign(i.nr_cells, 0);
    for (size_t f = 16; f < r.size(); ++f) {
      uint64_t cell = 0, count = 0;
      if (!r.Pair(f, &cell, &count) || cell >= i.nr_cells || count > UINT32_MAX) return false;
      w.cells[cell] = static_cast<uint32_t>(count);
    }
    p->windows.push_back(std::move(w));
  } else if (tag == "vdso-gz") {
    const uint64_t size = r.Dec(1);
    std::optional<std::string> gz = Base64Decode(r.Str(2));
    if (!r.ok() || !gz || size > kMaxVdsoBytes) return false;
    auto image = Gunzip(*gz, size);
    if (!image || image->size() != size) return false;
    p->vdso_image = std::move(*image);
  }
  // Anything else is from a newer minor version: skipped.
  return r.ok();
}

// The context table, compactly: each distinct (sample, stack, caller) once
// as a `csite`, then a `ctx` line per (bucket, cpu, tid) listing its sites
// and counts (the table is ordered by bucket, cpu, tid: one pass).
// sample_lines: the keys of the sample lines written, in order.
void WriteContexts(const Profile& p, const std::vector<SampleKey>& sample_lines, LineWriter& w) {
  if (p.context_granularity_ns == 0) return;
  // The ssample lines, then the sample lines, are sites 1, 2, ... without
  // csite lines of their own (1.7): each would have repeated its line.
  w.Tag("context").Dec(p.context_granularity_ns).Dec(1).End();
  std::map<std::tuple<SampleKey, uint32_t, uint64_t>, uint64_t> site_ids;
  for (const auto& [k, count] : p.contexts) site_ids.try_emplace({k.sample, k.stack, k.caller}, 0);
  uint64_t next = 0;
  auto implicit = [&](const SampleKey& k, uint32_t stack) {
    ++next;
    if (auto it = site_ids.find({k, stack, 0}); it != site_ids.end()) it->second = next;
  };
  for (const auto& [k, count] : p.stack_samples) implicit(k.sample, k.stack);
  for (const SampleKey& k : sample_lines) implicit(k, 0);
  for (auto& [site, id] : site_ids) {
    if (id != 0) continue;
    id = ++next;
    const auto& [sk, stack, caller] = site;
    w.Tag("csite").Dec(id).Dec(sk.pid).Hex(sk.space_id).Hex(sk.ip).Hex(sk.flags).Dec(stack);
    w.Hex(caller).End();
  }
  // One cx line per (bucket, CPU, thread): its sites in order, each as
  // the distance from the one before (1.8).
  std::vector<std::pair<uint64_t, uint64_t>> line;  // (site, count)
  auto end_line = [&] {
    std::sort(line.begin(), line.end());
    uint64_t last = 0;
    for (const auto& [id, count] : line) {
      if (count == 1)
        w.Dec(id - last);
      else
        w.Pair(id - last, count);
      last = id;
    }
    w.End();
    line.clear();
  };
  const SampleContextKey* first = nullptr;
  for (const auto& [k, count] : p.contexts) {
    if (!first || first->bucket != k.bucket || first->cpu != k.cpu || first->tid != k.tid) {
      if (first) end_line();
      w.Tag("cx").Dec(k.bucket).Dec(k.cpu).Dec(k.tid);
      first = &k;
    }
    line.push_back({site_ids.at({k.sample, k.stack, k.caller}), count});
  }
  if (first) end_line();
}

}  // namespace

std::string SerializeProfile(const Profile& profile) {
  // The reader numbers stacks in the order of the file, which sorts them.
  const Profile p = WithStacksInFileOrder(profile);
  std::string out;
  LineWriter w(&out);
  out += std::string(kMagic) + " " + std::to_string(kProfileFormatMajor) + " " +
         std::to_string(kProfileFormatMinor) + "\n";
  for (const auto& [k, v] : p.attributes) w.Tag("attr").Str(k).Str(v).End();
  w.Tag("time").Dec(p.first_time_ns).Dec(p.last_time_ns).End();
  w.Tag("lost").Dec(p.lost_samples_in_records).Dec(p.lost_records_in_records).End();
  if (p.idle_ticks) w.Tag("idle").Dec(p.idle_ticks).Dec(p.iowait_ticks).End();
  const RecordStats& s = p.records;
  w.Tag("records").Dec(s.samples).Dec(s.comms).Dec(s.exits).Dec(s.maps).Dec(s.losts);
  w.Dec(s.unknown).Dec(s.malformed).End();
  for (const auto& [cpu, c] : p.cpus) {
    w.Tag("cpu").Dec(cpu).Dec(c.samples).Dec(c.has_control_totals).Dec(c.samples_taken);
    w.Dec(c.lost_samples).Dec(c.lost_records).End();
  }
  for (const auto& [pid, proc] : p.processes) {
    w.Tag("process").Dec(pid).Dec(proc.exited).Dec(proc.exit_time_ns).End();
    for (const ProcessName& n : proc.names)
      w.Tag("name").Dec(pid).Dec(n.time_ns).Dec(n.kind).Dec(n.parent_pid).Str(n.name).End();
  }
  for (const auto& [key, maps] : p.mappings)
    for (const Mapping& m : maps)
      w.Tag("map").Dec(key.pid).Hex(key.space_id).Hex(m.start).Hex(m.end).Hex(m.pgoff).Str(m.path).End();
  // 1.7: a sample line counts only the samples without a stack; the
  // reader adds each ssample line's to its sample (a third of a file with
  // stacks was sample lines that repeated them).
  std::map<SampleKey, uint64_t> with_stack;
  for (const auto& [k, count] : p.stack_samples) with_stack[k.sample] += count;
  std::vector<SampleKey> sample_lines;
  for (const auto& [k, count] : p.samples) {
    auto it = with_stack.find(k);
    const uint64_t without = it == with_stack.end() || it->second > count ? count : count - it->second;
    if (without == 0) continue;
    w.Tag("sample").Dec(k.pid).Hex(k.space_id).Hex(k.ip).Hex(k.flags).Dec(without).End();
    sample_lines.push_back(k);
  }
  for (const auto& [k, count] : p.caller_edges) {
    const SampleKey& sk = k.sample;
    w.Tag("edge").Dec(sk.pid).Hex(sk.space_id).Hex(sk.ip).Hex(sk.flags).Hex(k.caller).Dec(count);
    w.End();
  }
  WriteStacks(p, w);
  WriteContexts(p, sample_lines, w);
  w.Tag("kernel-symbols").Dec(p.kernel_symbols.available).Str(p.kernel_symbols.note).End();
  uint64_t last_ksym = 0;  // sorted: each the distance from the last (1.8)
  for (const KernelSymbol& k : p.kernel_symbols.symbols) {
    w.Tag("ks").Hex(k.address - last_ksym).Str(std::string(1, k.type)).Str(k.name).Str(k.module).End();
    last_ksym = k.address;
  }
  for (const auto& [pid, syms] : p.jit_symbols)
    for (const JitSymbol& j : syms) w.Tag("jit").Dec(pid).Hex(j.start).Hex(j.size).Str(j.name).End();
  for (const auto& [path, id] : p.build_ids) w.Tag("buildid").Str(path).Str(id).End();
  for (const WindowCounts& win : p.windows) {
    const tprof_window_info& i = win.info;
    w.Tag("window").Dec(i.id).Dec(i.kind).Dec(i.pid).Dec(i.flags).Hex(i.start).Dec(i.length);
    w.Dec(i.block_bytes).Dec(i.scale).Dec(i.nr_cells).Dec(i.cell_bytes).Dec(i.nr_procs);
    w.Dec(i.in_range).Dec(i.out_of_range).Dec(i.wait).Dec(i.untracked_forks);
    for (size_t c = 0; c < win.cells.size(); ++c)
      if (win.cells[c]) w.Pair(c, win.cells[c]);
    w.End();
  }
  // The vDSO image gzipped (1.4): x86-64's 8 KiB image takes ~4 kB of
  // base64 where 1.2's hex took 16 kB, most of a short recording's file.
  // Hex, readable by older readers too, only if zlib fails.
  if (!p.vdso_image.empty()) {
    if (auto gz = Gzip(p.vdso_image)) {
      w.Tag("vdso-gz").Dec(p.vdso_image.size()).Str(Base64Encode(*gz)).End();
    } else {
      static const char kDigits[] = "0123456789abcdef";
      std::string hex;
      hex.reserve(p.vdso_image.size() * 2);
      for (unsigned char c : p.vdso_image) {
        hex += kDigits[c >> 4];
        hex += kDigits[c & 15];
      }
      w.Tag("vdso").Str(hex).End();
    }
  }
  // Last, the checksum of everything above (1.5): a byte changed after
  // writing is refused instead of read as a different profile.
  out += "crc32\t" + Crc32Hex(Crc32(out)) + "\n";
  out += "end\n";
  return out;
}

Expected<Profile> ParseProfile(std::string_view text, const std::string& name) {
  size_t eol = text.find('\n');
  std::string_view header = text.substr(0, eol);
  int major = -1, minor = -1;
  std::string header_str(header);
  char magic[32] = {};
  if (std::sscanf(header_str.c_str(), "%31s %d %d", magic, &major, &minor) != 3 ||
      std::strcmp(magic, kMagic) != 0)
    return BadFile(name, "not a tprof profile (the first line is not `tprof-profile MAJOR "
                         "MINOR`)");
  if (major != kProfileFormatMajor)
    return Error::FromErrno(
        EPROTO, name + ": profile format version " + std::to_string(major) + "." +
                    std::to_string(minor) + " is not supported (this library reads " +
                    std::to_string(kProfileFormatMajor) + ".x)");
  Profile p;
  ParseState state;
  bool ended = false;
  size_t line_no = 1;
  size_t pos = eol == std::string_view::npos ? text.size() : eol + 1;
  bool checked = false;
  while (pos < text.size() && !ended) {
    ++line_no;
    const size_t line_start = pos;
    size_t next = text.find('\n', pos);
    std::string_view line = text.substr(pos, next == std::string_view::npos ? next : next - pos);
    pos = next == std::string_view::npos ? text.size() : next + 1;
    // A last line without its newline was cut off mid-way (reported below).
    if (next == std::string_view::npos && line != "end") break;
    if (line == "end") {
      ended = true;
      break;
    }
    if (checked)
      return BadFile(name, "line " + std::to_string(line_no) + " comes after the checksum (`" +
                               Excerpt(line) + "`): only `end` may");
    if (line.empty() || line[0] == '#') continue;
    if (line.starts_with("crc32\t")) {
      const std::string want = Crc32Hex(Crc32(text.substr(0, line_start)));
      if (line.substr(6) != want)
        return BadFile(name, "the checksum (line " + std::to_string(line_no) + ", crc32 " +
                                 Excerpt(line.substr(6)) + ") is not the file's (" + want +
                                 "): it changed after it was written; record it again, or "
                                 "delete the crc32 line to read it unchecked");
      checked = true;
      continue;
    }
    LineReader r(line);
    if (!ParseLine(r, &p, &state))
      return BadFile(name, "line " + std::to_string(line_no) + " is malformed: `" +
                               Excerpt(line) + "`");
  }
  if (!ended)
    return BadFile(name, "the profile is cut short (no `end` line): the recorder did not "
                         "finish; record it again");
  // 1.7's sample lines leave out the samples with a stack (SerializeProfile).
  if (minor >= 7)
    for (const auto& [k, count] : p.stack_samples) p.samples[k.sample] += count;
  // Hand-edited or concatenated files: restore the orders the model promises.
  for (auto& [key, maps] : p.mappings) std::sort(maps.begin(), maps.end());
  std::sort(p.kernel_symbols.symbols.begin(), p.kernel_symbols.symbols.end());
  for (auto& [pid, syms] : p.jit_symbols) std::sort(syms.begin(), syms.end());
  for (auto& [pid, proc] : p.processes)
    std::stable_sort(proc.names.begin(), proc.names.end(),
                     [](const ProcessName& a, const ProcessName& b) { return a.time_ns < b.time_ns; });
  return p;
}

Status WriteProfile(const Profile& profile, const std::string& path) {
  std::string text = SerializeProfile(profile);
  auto packed = Gzip(text);
  return WriteFileAtomically(path, packed ? *packed : text);  // zlib failed: the text as is
}

Expected<Profile> ReadProfile(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    int err = errno;
    if (err == ENOENT)
      return Error::FromErrno(err, path + " not found: " + std::strerror(err));
    return Error::FromErrno(err, "cannot read " + path + ": " + std::strerror(err));
  }
  std::string text;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      return Error::FromErrno(err, "cannot read " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  if (text.size() >= 2 && uint8_t(text[0]) == 0x1f && uint8_t(text[1]) == 0x8b) {
    auto unpacked = Gunzip(text, kMaxProfileTextBytes);
    if (!unpacked) return Error(unpacked.error().code(), path + ": " + unpacked.error().message());
    text = std::move(*unpacked);
  }
  return ParseProfile(text, path);
}

}  // namespace tprof
