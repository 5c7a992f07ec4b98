// The pprof export, read back with the classes protoc generates from the
// same profile.proto (after gunzipping it with zlib): sample types and
// values, labels, locations with their callers, functions and mappings, on
// a synthetic profile and on this test binary's own code (real ELF symbols,
// DWARF lines, build id).
#include "tprof/output/pprof.h"
#include "tprof/output/pprof_series.h"

#include <gtest/gtest.h>
#include <profile.pb.h>
#include <unistd.h>
#include <zlib.h>

#include <climits>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "../common/records.h"
#include "../common/temp_dir.h"
#include "elf_fixtures.h"

volatile int tprof_pprof_test_sink;
extern "C" __attribute__((noinline)) void tprof_pprof_test_marker_fn() {
  for (int i = 0; i < 4; ++i) tprof_pprof_test_sink = tprof_pprof_test_sink + i;
}

namespace {

namespace pb = perftools::profiles;
using tprof::EncodePprof;
using tprof::Profile;
using tprof::ProfileBuilder;
using tprof::Symbolizer;
using tprof::test::CommRec;
using tprof::test::Records;
using tprof::test::SampleRec;

constexpr uint64_t kSyscall = 0xffffffff81000110;  // in do_syscall_64
constexpr uint64_t kSyscallStart = 0xffffffff81000100;
constexpr uint64_t kIdle = 0xffffffff81000310;  // in default_idle
constexpr uint32_t U = TPROF_SAMPLE_USER;

std::string Gunzip(const std::string& gz) {
  z_stream s{};
  if (inflateInit2(&s, 15 + 16) != Z_OK) return "";
  std::string out;
  char buf[65536];
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  s.avail_in = static_cast<uInt>(gz.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    s.next_out = reinterpret_cast<Bytef*>(buf);
    s.avail_out = sizeof(buf);
    rc = inflate(&s, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - s.avail_out);
  }
  inflateEnd(&s);
  return rc == Z_STREAM_END ? out : "";
}

// Decodes EncodePprof's output, failing the test if it is not a gzipped
// Profile.
pb::Profile Decode(const tprof::Expected<std::string>& bytes) {
  pb::Profile p;
  EXPECT_TRUE(bytes) << bytes.error().message();
  if (!bytes) return p;
  EXPECT_GE(bytes->size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>((*bytes)[0]), 0x1f) << "no gzip magic";
  EXPECT_EQ(static_cast<unsigned char>((*bytes)[1]), 0x8b) << "no gzip magic";
  std::string raw = Gunzip(*bytes);
  EXPECT_FALSE(raw.empty()) << "not a gzip stream";
  EXPECT_TRUE(p.ParseFromString(raw)) << "not a perftools.profiles.Profile";
  return p;
}

// Index-based lookups into a decoded profile.
class View {
 public:
  explicit View(const pb::Profile& p) : p_(p) {
    for (const pb::Location& l : p.location()) locations_[l.id()] = &l;
    for (const pb::Function& f : p.function()) functions_[f.id()] = &f;
    for (const pb::Mapping& m : p.mapping()) mappings_[m.id()] = &m;
  }
  const std::string& Str(int64_t i) const {
    static const std::string kBad = "<bad string index>";
    return i >= 0 && i < p_.string_table_size() ? p_.string_table(static_cast<int>(i)) : kBad;
  }
  const pb::Location* Loc(uint64_t id) const {
    auto it = locations_.find(id);
    return it == locations_.end() ? nullptr : it->second;
  }
  const pb::Mapping* Map(uint64_t id) const {
    auto it = mappings_.find(id);
    return it == mappings_.end() ? nullptr : it->second;
  }
  // The function name of a location's (only) line.
  std::string FunctionOf(uint64_t location_id) const {
    const pb::Location* l = Loc(location_id);
    if (!l || l->line_size() != 1) return "<no line>";
    auto it = functions_.find(l->line(0).function_id());
    return it == functions_.end() ? "<bad function>" : Str(it->second->name());
  }
  // A location's lines, first to last: function name, file and line.
  std::vector<std::tuple<std::string, std::string, int64_t>> Lines(uint64_t location_id) const {
    std::vector<std::tuple<std::string, std::string, int64_t>> out;
    const pb::Location* l = Loc(location_id);
    for (int i = 0; l && i < l->line_size(); ++i) {
      auto it = functions_.find(l->line(i).function_id());
      if (it == functions_.end()) return {};
      out.emplace_back(Str(it->second->name()), Str(it->second->filename()), l->line(i).line());
    }
    return out;
  }
  const pb::Function* FunctionOfLoc(uint64_t location_id) const {
    const pb::Location* l = Loc(location_id);
    if (!l || l->line_size() != 1) return nullptr;
    auto it = functions_.find(l->line(0).function_id());
    return it == functions_.end() ? nullptr : it->second;
  }
  std::string Label(const pb::Sample& s, const std::string& key, int64_t* num = nullptr) const {
    for (const pb::Label& l : s.label())
      if (Str(l.key()) == key) {
        if (num) *num = l.num();
        return Str(l.str());
      }
    return "<no label>";
  }
  // Sample values at index i, summed per leaf function.
  std::map<std::string, int64_t> FlatByFunction(int i) const {
    std::map<std::string, int64_t> out;
    for (const pb::Sample& s : p_.sample()) out[FunctionOf(s.location_id(0))] += s.value(i);
    return out;
  }
  int64_t Total(int i) const {
    int64_t t = 0;
    for (const pb::Sample& s : p_.sample()) t += s.value(i);
    return t;
  }
  bool HasComment(const std::string& text) const {
    for (int64_t c : p_.comment())
      if (Str(c) == text) return true;
    return false;
  }

 private:
  const pb::Profile& p_;
  std::map<uint64_t, const pb::Location*> locations_;
  std::map<uint64_t, const pb::Function*> functions_;
  std::map<uint64_t, const pb::Mapping*> mappings_;
};

// pid 100 "app": 6 in do_syscall_64 without a caller, 4 called from the
// last byte of entry_SYSCALL_64 (return address = do_syscall_64's first
// byte), 30 in its executable, 20 in libc; pid 200 "worker": 10 kernel;
// idle 15; lost 5 samples and 1 record. 1 kHz: 1 ms per sample.
Profile TestProfile() {
  ProfileBuilder b;
  Records r;
  r.Add(CommRec(100, TPROF_COMM_EXISTING, "app")).Add(CommRec(200, TPROF_COMM_EXISTING, "worker"));
  r.Map(100, 1, 0x7f0000, 0x7f8000, 0x1000, "/nonexistent/libc.so.6");
  r.Map(100, 1, 0x400000, 0x500000, 0, "/nonexistent/app");
  r.AddN(6, SampleRec(100, 1, kSyscall, 0));
  r.AddN(4, SampleRec(100, 1, kSyscall, 0, 1, kSyscallStart));
  r.AddN(30, SampleRec(100, 1, 0x400100, U));
  r.AddN(20, SampleRec(100, 1, 0x7f0100, U));
  r.AddN(10, SampleRec(200, 2, kSyscall, 0));
  r.AddN(15, SampleRec(0, 0, kIdle, TPROF_SAMPLE_IDLE));
  b.AddRecords(r.data(), r.size());
  b.SetCpuTotals(0, 60, 5, 1);
  b.SetCpuTotals(1, 30, 0, 0);
  b.SetAttribute("frequency_hz", "1000");
  Profile p = b.Finish();
  p.kernel_symbols.available = true;
  p.kernel_symbols.symbols = {{0xffffffff81000000, 'T', "entry_SYSCALL_64", ""},
                              {0xffffffff81000100, 't', "do_syscall_64", ""},
                              {0xffffffff81000300, 'T', "default_idle", ""},
                              {0xffffffff81000400, 'T', "next", ""}};
  return p;
}

TEST(Pprof, SampleTypesAreSamplesAndCpuNanosecondsAtTheProfilesPeriod) {
  Profile p = TestProfile();
  Symbolizer sym(p);
  pb::Profile out = Decode(EncodePprof(p, sym));
  View v(out);
  ASSERT_GE(out.string_table_size(), 1);
  EXPECT_EQ(out.string_table(0), "") << "string_table[0] must be empty";
  ASSERT_EQ(out.sample_type_size(), 2);
  EXPECT_EQ(v.Str(out.sample_type(0).type()), "samples");
  EXPECT_EQ(v.Str(out.sample_type(0).unit()), "count");
  EXPECT_EQ(v.Str(out.sample_type(1).type()), "cpu");
  EXPECT_EQ(v.Str(out.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(v.Str(out.period_type().type()), "cpu");
  EXPECT_EQ(v.Str(out.period_type().unit()), "nanoseconds");
  EXPECT_EQ(out.period(), 1000000);
  EXPECT_EQ(v.Str(out.default_sample_type()), "cpu");
  EXPECT_EQ(v.Total(0), 85) << "every delivered sample, idle included";
  EXPECT_EQ(v.Total(1), 85 * 1000000);
  for (const pb::Sample& s : out.sample()) {
    ASSERT_EQ(s.value_size(), 2);
    EXPECT_EQ(s.value(1), s.value(0) * 1000000);
  }
  EXPECT_TRUE(v.HasComment("lost_samples=5"));
  EXPECT_TRUE(v.HasComment("lost_records=1"));
  EXPECT_TRUE(v.HasComment("samples_taken=90"));
  EXPECT_TRUE(v.HasComment("frequency_hz=1000"));
}

TEST(Pprof, CounterSampledProfilesHaveOnlySampleCounts) {
  Profile p = TestProfile();
  p.attributes["frequency_hz"] = "0";  // sampled on --event: no clock period
  Symbolizer sym(p);
  pb::Profile out = Decode(EncodePprof(p, sym));
  View v(out);
  ASSERT_EQ(out.sample_type_size(), 1);
  EXPECT_EQ(v.Str(out.sample_type(0).type()), "samples");
  EXPECT_EQ(out.period(), 0);
  EXPECT_EQ(v.Total(0), 85);
}

TEST(Pprof, SamplesCarryPidAndCommLabelsWithIdleAsPidZero) {
  Profile p = TestProfile();
  Symbolizer sym(p);
  pb::Profile out = Decode(EncodePprof(p, sym));
  View v(out);
  std::map<int64_t, int64_t> by_pid;
  std::map<int64_t, std::string> comm;
  for (const pb::Sample& s : out.sample()) {
    int64_t pid = -1;
    v.Label(s, "pid", &pid);
    by_pid[pid] += s.value(0);
    comm[pid] = v.Label(s, "comm");
  }
  EXPECT_EQ(by_pid, (std::map<int64_t, int64_t>{{0, 15}, {100, 60}, {200, 10}}));
  EXPECT_EQ(comm[0], "idle");
  EXPECT_EQ(comm[100], "app");
  EXPECT_EQ(comm[200], "worker");
}

// A continuous recording's series: one file per interval, named by host
// and end time so that they sort in time, each a pprof with the host label
// and the interval's time; the oldest go beyond `keep`; other files stay.
TEST(PprofSeries, WritesAFilePerIntervalAndKeepsTheNewest) {
  tprof::test::TempDir dir;
  dir.Write("notes.txt", "not the series'");
  tprof::PprofSeries series({.dir = dir.path(), .host = "web/1", .keep = 2});
  Profile p = TestProfile();
  Symbolizer sym(p);
  const int64_t t0 = 1'790'000'000'000'000'000;  // 2026-09-21
  std::vector<std::string> paths;
  for (int i = 0; i < 3; ++i) {
    auto path = series.Write(p, sym, t0 + i * 60'000'000'000ll, 60'000'000'000ll);
    ASSERT_TRUE(path) << path.error().message();
    paths.push_back(*path);
  }
  EXPECT_EQ(series.NameAt(t0), "tprof-web_1-20260921T141320.000000000Z.pb.gz");
  EXPECT_EQ(series.Files(), (std::vector<std::string>{paths[1], paths[2]}));
  EXPECT_TRUE(std::ifstream(dir.File("notes.txt")).good());
  std::ifstream in(paths[2], std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  pb::Profile out = Decode(tprof::Expected<std::string>(bytes));
  View v(out);
  int64_t total = 0;
  for (const pb::Sample& s : out.sample()) {
    total += s.value(0);
    EXPECT_EQ(v.Label(s, "host"), "web/1");
  }
  EXPECT_EQ(static_cast<uint64_t>(total), p.TotalSamples());
  EXPECT_EQ(out.time_nanos(), t0 + 60'000'000'000ll);
  EXPECT_EQ(out.duration_nanos(), 60'000'000'000ll);
}

TEST(Pprof, CallersAreASecondLocationSymbolizedAtTheCall) {
  Profile p = TestProfile();
  Symbolizer sym(p);
  pb::Profile out = Decode(EncodePprof(p, sym));
  View v(out);
  int64_t with_caller = 0, without = 0;
  for (const pb::Sample& s : out.sample()) {
    if (v.FunctionOf(s.location_id(0)) != "do_syscall_64") continue;
    int64_t pid = 0;
    v.Label(s, "pid", &pid);
    if (pid != 100) continue;
    if (s.location_id_size() == 2) {
      with_caller += s.value(0);
      const pb::Location* caller = v.Loc(s.location_id(1));
      ASSERT_TRUE(caller);
      EXPECT_EQ(caller->address(), kSyscallStart) << "a caller's address is its return address";
      // ... but it is named after the call before it.
      EXPECT_EQ(v.FunctionOf(s.location_id(1)), "entry_SYSCALL_64");
      EXPECT_NE(s.location_id(0), s.location_id(1));
    } else {
      EXPECT_EQ(s.location_id_size(), 1);
      without += s.value(0);
    }
  }
  EXPECT_EQ(with_caller, 4);
  EXPECT_EQ(without, 6);
  // Flat per function: the leaf only.
  auto flat = v.FlatByFunction(0);
  EXPECT_EQ(flat["do_syscall_64"], 20);
  EXPECT_EQ(flat["default_idle"], 15);
  EXPECT_EQ(flat["entry_SYSCALL_64"], 0);
  EXPECT_EQ(flat["app+0x100"], 30) << "unnamed addresses keep the report's names";
  EXPECT_EQ(flat["libc.so.6+0x1100"], 20);
}

TEST(Pprof, MappingsPutTheMainExecutableFirstAndKernelAddressesInKallsyms) {
  Profile p = TestProfile();
  Symbolizer sym(p);
  pb::Profile out = Decode(EncodePprof(p, sym));
  View v(out);
  ASSERT_EQ(out.mapping_size(), 3) << "app, libc.so.6 and the kernel";
  EXPECT_EQ(v.Str(out.mapping(0).filename()), "/nonexistent/app");
  EXPECT_EQ(out.mapping(0).id(), 1u);
  EXPECT_EQ(out.mapping(0).memory_start(), 0x400000u);
  EXPECT_EQ(out.mapping(0).memory_limit(), 0x500000u);
  std::map<std::string, const pb::Mapping*> by_name;
  std::set<uint64_t> ids;
  for (const pb::Mapping& m : out.mapping()) {
    by_name[v.Str(m.filename())] = &m;
    ids.insert(m.id());
  }
  EXPECT_EQ(ids, (std::set<uint64_t>{1, 2, 3}));
  const pb::Mapping* libc = by_name["/nonexistent/libc.so.6"];
  ASSERT_TRUE(libc);
  EXPECT_EQ(libc->memory_start(), 0x7f0000u);
  EXPECT_EQ(libc->file_offset(), 0x1000u);
  EXPECT_FALSE(libc->has_functions()) << "the file does not exist: nothing was named";
  const pb::Mapping* kernel = by_name["[kernel.kallsyms]"];
  ASSERT_TRUE(kernel);
  EXPECT_EQ(kernel->memory_start(), 0xffffffff81000000u);
  EXPECT_TRUE(kernel->has_functions());
  // Every location is in the mapping that holds its address.
  for (const pb::Location& l : out.location()) {
    const pb::Mapping* m = v.Map(l.mapping_id());
    ASSERT_TRUE(m) << "location " << l.id() << " at 0x" << std::hex << l.address();
    EXPECT_GE(l.address(), m->memory_start());
    EXPECT_LE(l.address(), m->memory_limit());
  }
}

TEST(Pprof, OneProcessOnly) {
  Profile p = TestProfile();
  Symbolizer sym(p);
  pb::Profile out = Decode(EncodePprof(p, sym, tprof::PprofOptions{100}));
  View v(out);
  EXPECT_EQ(v.Total(0), 60);
  for (const pb::Sample& s : out.sample()) EXPECT_EQ(v.Label(s, "comm"), "app");
  pb::Profile idle = Decode(EncodePprof(p, sym, tprof::PprofOptions{0}));
  EXPECT_EQ(View(idle).Total(0), 15);
}

TEST(Pprof, AnEmptyProfileIsAValidEmptyProfile) {
  Profile p;
  Symbolizer sym(p);
  pb::Profile out = Decode(EncodePprof(p, sym));
  EXPECT_EQ(out.sample_size(), 0);
  EXPECT_EQ(out.sample_type_size(), 1);
  EXPECT_EQ(out.mapping_size(), 0);
}

// This test binary's own mappings (as TPROF_REC_MAP records would give
// them) and samples in a function of it: a real ELF file with symbols,
// DWARF and a build id.
TEST(Pprof, RealCodeGetsItsFunctionSourceFileLineAndBuildId) {
  constexpr uint64_t kSpace = 5;
  const uint32_t pid = static_cast<uint32_t>(getpid());
  Profile p = tprof::test::SelfProfile(pid, kSpace);
  ASSERT_FALSE(p.mappings.empty());
  p.processes[pid].pid = pid;
  p.processes[pid].names.push_back({0, TPROF_COMM_EXISTING, 0, "unit"});
  const uint64_t fn = reinterpret_cast<uint64_t>(&tprof_pprof_test_marker_fn);
  p.samples[{pid, kSpace, fn + 1, U}] = 7;
  p.attributes["frequency_hz"] = "4000";
  Symbolizer sym(p);
  pb::Profile out = Decode(EncodePprof(p, sym));
  View v(out);
  ASSERT_EQ(out.sample_size(), 1);
  EXPECT_EQ(out.sample(0).value(0), 7);
  EXPECT_EQ(out.sample(0).value(1), 7 * 250000);
  const uint64_t loc_id = out.sample(0).location_id(0);
  EXPECT_EQ(v.FunctionOf(loc_id), "tprof_pprof_test_marker_fn");
  const pb::Function* f = v.FunctionOfLoc(loc_id);
  ASSERT_TRUE(f);
  EXPECT_NE(v.Str(f->filename()).find("pprof_test.cc"), std::string::npos) << v.Str(f->filename());
  const pb::Location* l = v.Loc(loc_id);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->address(), fn + 1);
  EXPECT_GT(l->line(0).line(), 0);
  ASSERT_EQ(out.mapping_size(), 1) << "only the mapping that was sampled";
  const pb::Mapping& m = out.mapping(0);
  EXPECT_EQ(l->mapping_id(), m.id());
  char exe[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(n, 0);
  EXPECT_EQ(v.Str(m.filename()), std::string(exe, static_cast<size_t>(n)));
  EXPECT_TRUE(m.has_functions());
  EXPECT_TRUE(m.has_filenames());
  EXPECT_TRUE(m.has_line_numbers());
  // Debian's gcc links with --build-id: 20 bytes of SHA-1, in hex.
  EXPECT_EQ(v.Str(m.build_id()).size(), 40u) << v.Str(m.build_id());
}

// profile.proto: a Location's Lines are the functions inlined at its
// address, innermost first, then the function they were inlined into.
// libsymtest.so's st_inlined is always_inline in st_exported.
TEST(Pprof, InlinedFunctionsAreLinesOfTheLocationInnermostFirst) {
  using namespace tprof::test;
  const uint64_t exported = SymbolAddress("st_exported");
  ASSERT_NE(exported, 0u) << "no " << SymFiles() << "/full/libsymtest.so: make unit-tests";
  Profile p = LibraryProfile(SymFiles() + "/full/libsymtest.so");
  Symbolizer sym(p);
  uint64_t at = 0, plain = 0;  // with and without st_inlined there
  for (uint64_t a = exported; a < exported + 64; ++a) {
    const tprof::Location& loc = sym.Resolve(kSymPid, kSymSpace, kSymBase + a, true);
    if (loc.symbol != "st_exported") break;
    if (!loc.inlined.empty() && at == 0) at = a;
    if (loc.inlined.empty() && plain == 0) plain = a;
  }
  ASSERT_NE(at, 0u) << "no address of st_exported carries the inlined st_inlined";
  ASSERT_NE(plain, 0u) << "no address of st_exported's own code";
  const tprof::Location& inlined = sym.Resolve(kSymPid, kSymSpace, kSymBase + at, true);
  const uint32_t line = inlined.line;
  ASSERT_GT(line, 0u);
  // st_exported calls st_inlined on its own (only) line; read from the
  // source, not from the symbolizer.
  int64_t call_line = 0;
  {
    std::ifstream src(inlined.source_file);
    int64_t n = 0;
    for (std::string text; std::getline(src, text) && call_line == 0;)
      if (++n, text.find("int st_exported(") != std::string::npos) call_line = n;
  }
  ASSERT_GT(call_line, 0) << "symtest.c: " << inlined.source_file;
  ASSERT_NE(call_line, static_cast<int64_t>(line));
  p.samples[{kSymPid, kSymSpace, kSymBase + at, U}] = 3;
  p.samples[{kSymPid, kSymSpace, kSymBase + plain, U}] = 2;

  pb::Profile out = Decode(EncodePprof(p, sym));
  View v(out);
  ASSERT_EQ(out.sample_size(), 2);
  for (const pb::Sample& s : out.sample()) {
    const auto lines = v.Lines(s.location_id(0));
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(std::get<0>(lines.back()), "st_exported") << "the caller's function comes last";
    if (s.value(0) == 2) {
      EXPECT_EQ(lines.size(), 1u) << "nothing inlined there";
      continue;
    }
    ASSERT_EQ(lines.size(), 2u) << "one Line per inlined function, then the caller's";
    EXPECT_EQ(std::get<0>(lines[0]), "st_inlined");
    EXPECT_NE(std::get<1>(lines[0]).find("symtest.c"), std::string::npos) << std::get<1>(lines[0]);
    EXPECT_EQ(std::get<2>(lines[0]), line) << "the innermost holds the sampled line";
    EXPECT_EQ(std::get<2>(lines[1]), call_line) << "the caller's Line is at its call";
    EXPECT_EQ(std::get<1>(lines[1]), std::get<1>(lines[0])) << "both functions are in symtest.c";
  }
}

}  // namespace
