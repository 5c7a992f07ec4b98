#include "tprof/output/pprof.h"

#include <profile.pb.h>  // generated from libtprofctl/proto/profile.proto

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "tprof/base/gzip.h"
#include "tprof/output/report.h"
#include "tprof/analysis/stacks.h"

namespace tprof {

namespace {

namespace pb = perftools::profiles;

uint32_t ReportPid(const SampleKey& key) { return key.idle() ? 0 : key.pid; }

// Builds the message: tables of strings, functions, locations and mappings
// with ids from 1 (0 means none in pprof), in the order they are first used.
class PprofBuilder {
 public:
  PprofBuilder(const Profile& profile, Symbolizer& symbolizer, const PprofOptions& options)
      : profile_(profile), sym_(symbolizer), options_(options) {}

  Expected<std::string> Build() {
    Str("");  // string_table[0] is always ""
    period_ns_ = static_cast<int64_t>(SamplingPeriodNs(profile_));
    AddValueType(out_.add_sample_type(), "samples", "count");
    if (period_ns_) {
      AddValueType(out_.add_sample_type(), "cpu", "nanoseconds");
      AddValueType(out_.mutable_period_type(), "cpu", "nanoseconds");
      out_.set_period(period_ns_);
      out_.set_default_sample_type(Str("cpu"));
    }
    ForEachSampleStack(profile_, sym_,
                       [this](const SampleKey& key, const std::vector<StackFrame>& frames,
                              uint64_t count) {
                         if (options_.pid && *options_.pid != ReportPid(key)) return;
                         AddSample(key, frames, count);
                       });
    FinishMappings();
    AddComments();
    if (options_.duration_nanos)
      out_.set_duration_nanos(options_.duration_nanos);
    else if (profile_.last_time_ns > profile_.first_time_ns)
      out_.set_duration_nanos(static_cast<int64_t>(profile_.last_time_ns - profile_.first_time_ns));
    if (options_.time_nanos) out_.set_time_nanos(options_.time_nanos);
    out_.mutable_string_table()->Reserve(static_cast<int>(strings_.size()));
    std::vector<const std::string*> table(strings_.size());
    for (const auto& [s, index] : strings_) table[static_cast<size_t>(index)] = &s;
    for (const std::string* s : table) out_.add_string_table(*s);

    if (out_.ByteSizeLong() > static_cast<size_t>(INT_MAX))
      return Error::FromErrno(EOVERFLOW, "the pprof profile exceeds protobuf's 2 GiB limit");
    std::string bytes;
    if (!out_.SerializeToString(&bytes))
      return Error::FromErrno(EIO, "cannot serialize the pprof profile");
    return Gzip(bytes);
  }

 private:
  // One mapping as first seen, before the main executable is moved first.
  struct MappingEntry {
    MappingInfo info;
    bool main = false;           // a location in it is in the main executable
    uint64_t main_samples = 0;   // samples at such locations
    bool functions = false, files = false, lines = false;
  };

  int64_t Str(const std::string& s) {
    auto [it, added] = strings_.emplace(s, static_cast<int64_t>(strings_.size()));
    return it->second;
  }

  void AddValueType(pb::ValueType* v, const std::string& type, const std::string& unit) {
    v->set_type(Str(type));
    v->set_unit(Str(unit));
  }

  // Locations leaf first, as pprof wants them.
  void AddSample(const SampleKey& key, const std::vector<StackFrame>& frames, uint64_t count) {
    pb::Sample* s = out_.add_sample();
    for (size_t i = 0; i < frames.size(); ++i)
      s->add_location_id(LocationId(key.pid, frames[i], i == 0 ? count : 0));
    s->add_value(static_cast<int64_t>(count));
    if (period_ns_) s->add_value(static_cast<int64_t>(count) * period_ns_);
    const uint32_t pid = ReportPid(key);
    pb::Label* l = s->add_label();
    l->set_key(Str("pid"));
    l->set_num(pid);
    l = s->add_label();
    l->set_key(Str("comm"));
    l->set_str(Str(pid == 0 ? "idle" : profile_.ProcessDisplayName(pid)));
    for (const auto& [name, value] : options_.labels) {
      l = s->add_label();
      l->set_key(Str(name));
      l->set_str(Str(value));
    }
  }

  // A leaf location is the sampled address; a caller's is its return
  // address, described by the call before it (address - 1).
  uint64_t LocationId(uint32_t pid, const StackFrame& frame, uint64_t count) {
    const bool user = frame.user, caller = frame.return_address;
    const uint64_t address = frame.address, space_id = user ? frame.space_id : 0;
    const auto lkey = std::make_tuple(user ? pid : 0u, space_id, address, user, caller);
    auto it = locations_.find(lkey);
    if (it != locations_.end()) {
      if (count) AddMainSamples(out_.location(static_cast<int>(it->second - 1)), count);
      return it->second;
    }
    const uint64_t lookup = frame.lookup();
    const Location& loc = sym_.Resolve(pid, space_id, lookup, user);
    pb::Location* l = out_.add_location();
    const uint64_t id = static_cast<uint64_t>(out_.location_size());
    l->set_id(id);
    l->set_address(address);
    if (auto m = sym_.MappingAt(pid, space_id, lookup, user)) {
      const uint64_t index = MappingIndex(*m);
      MappingEntry& e = mappings_[index - 1];
      e.main |= loc.kind == SpaceKind::kMainExecutable;
      e.functions |= loc.resolved();
      e.files |= !loc.source_file.empty();
      e.lines |= loc.line != 0;
      l->set_mapping_id(index);  // renumbered by FinishMappings()
    }
    // Functions inlined at the address are Lines of this Location before
    // the function they were inlined into, innermost first, as
    // profile.proto orders them. The innermost holds the sampled line (the
    // symbolizer's source_file:line); each outer one the line (and file) of
    // its call of the one inside it, DWARF's call site.
    std::string file = loc.source_file;
    uint32_t line_number = loc.line;
    for (size_t i = 0; i < loc.inlined.size(); ++i) {
      pb::Line* inlined = l->add_line();
      inlined->set_function_id(FunctionId(loc.inlined[i], file));
      inlined->set_line(line_number);
      const bool call = i < loc.inlined_calls.size();
      file = call ? loc.inlined_calls[i].file : "";
      line_number = call ? loc.inlined_calls[i].line : 0;
    }
    pb::Line* line = l->add_line();
    line->set_function_id(FunctionId(loc.FunctionName(), file));
    line->set_line(line_number);
    locations_.emplace(lkey, id);
    if (count) AddMainSamples(*l, count);
    return id;
  }

  void AddMainSamples(const pb::Location& l, uint64_t count) {
    if (l.mapping_id() && mappings_[l.mapping_id() - 1].main)
      mappings_[l.mapping_id() - 1].main_samples += count;
  }

  uint64_t FunctionId(const std::string& name, const std::string& file) {
    auto [it, added] = functions_.emplace(std::make_pair(name, file), 0);
    if (!added) return it->second;
    pb::Function* f = out_.add_function();
    it->second = static_cast<uint64_t>(out_.function_size());
    f->set_id(it->second);
    f->set_name(Str(name));
    f->set_system_name(Str(name));
    f->set_filename(Str(file));
    return it->second;
  }

  // 1-based index into mappings_.
  uint64_t MappingIndex(const MappingInfo& m) {
    auto [it, added] = mapping_index_.emplace(m, mappings_.size() + 1);
    if (added) mappings_.push_back({m});
    return it->second;
  }

  // Writes the mappings, the main executable with the most samples first
  // (pprof's mapping[0]), then in order of first use; renumbers locations.
  void FinishMappings() {
    size_t first = 0;
    for (size_t i = 0; i < mappings_.size(); ++i)
      if (mappings_[i].main && (!mappings_[first].main ||
                                mappings_[i].main_samples > mappings_[first].main_samples))
        first = i;
    std::vector<uint64_t> new_id(mappings_.size());
    uint64_t next = 1;
    if (!mappings_.empty()) new_id[first] = next++;
    for (size_t i = 0; i < mappings_.size(); ++i)
      if (i != first) new_id[i] = next++;
    std::vector<size_t> order(mappings_.size());
    for (size_t i = 0; i < mappings_.size(); ++i) order[new_id[i] - 1] = i;
    for (size_t i : order) {
      const MappingEntry& e = mappings_[i];
      pb::Mapping* m = out_.add_mapping();
      m->set_id(new_id[i]);
      m->set_memory_start(e.info.start);
      m->set_memory_limit(e.info.limit);
      m->set_file_offset(e.info.offset);
      m->set_filename(Str(e.info.file));
      m->set_build_id(Str(e.info.build_id));
      m->set_has_functions(e.functions);
      m->set_has_filenames(e.files);
      m->set_has_line_numbers(e.lines);
    }
    for (pb::Location& l : *out_.mutable_location())
      if (l.mapping_id()) l.set_mapping_id(new_id[l.mapping_id() - 1]);
  }

  void AddComments() {
    for (const auto& [key, value] : profile_.attributes)
      out_.add_comment(Str(key + "=" + value));
    const uint64_t lost = profile_.TotalLostSamples();
    out_.add_comment(Str("samples_taken=" + std::to_string(profile_.TotalSamples() + lost)));
    out_.add_comment(Str("lost_samples=" + std::to_string(lost)));
    out_.add_comment(Str("lost_records=" + std::to_string(profile_.TotalLostRecords())));
    if (!profile_.kernel_symbols.available && !profile_.kernel_symbols.note.empty())
      out_.add_comment(Str("kernel symbols unavailable: " + profile_.kernel_symbols.note));
  }

  const Profile& profile_;
  Symbolizer& sym_;
  const PprofOptions& options_;
  int64_t period_ns_ = 0;
  pb::Profile out_;
  std::map<std::string, int64_t> strings_;
  std::map<std::tuple<uint32_t, uint64_t, uint64_t, bool, bool>, uint64_t> locations_;
  std::map<std::pair<std::string, std::string>, uint64_t> functions_;
  std::vector<MappingEntry> mappings_;
  std::map<MappingInfo, uint64_t> mapping_index_;
};

}  // namespace

Expected<std::string> EncodePprof(const Profile& profile, Symbolizer& symbolizer,
                                  const PprofOptions& options) {
  return PprofBuilder(profile, symbolizer, options).Build();
}

}  // namespace tprof
