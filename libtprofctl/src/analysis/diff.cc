#include "tprof/analysis/diff.h"

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <string_view>
#include <tuple>
#include <utility>

#include "base/json.h"
#include "base/text_format.h"

namespace tprof {

namespace {

using text::Appendf;
using text::Percent;

using RowKey = std::tuple<std::string, std::string, std::string>;  // process, space, function

// Samples per row of one report.
std::map<RowKey, uint64_t> Rows(const ReportData& d, DiffBy by) {
  std::map<RowKey, uint64_t> rows;
  for (const ProcessFunctions& pf : d.functions) {
    if (by == DiffBy::kProcess) {
      rows[{pf.name, "", ""}] += pf.samples;
      continue;
    }
    for (const FunctionRow& f : pf.functions) rows[{pf.name, f.space, f.function}] += f.samples;
  }
  return rows;
}

DiffSide Side(const DiffInput& in, const ReportData& d) {
  const Profile& p = in.profile;
  DiffSide s;
  s.label = in.label;
  s.samples_taken = d.all_samples;
  s.samples = d.samples;
  s.lost_samples = d.lost_samples;
  s.duration_ns = p.last_time_ns > p.first_time_ns ? p.last_time_ns - p.first_time_ns : 0;
  if (auto it = p.attributes.find("frequency_hz"); it != p.attributes.end())
    s.frequency_hz = it->second;
  return s;
}

const char* ByName(DiffBy by) { return by == DiffBy::kProcess ? "process" : "function"; }


void TextSide(const char* name, const DiffSide& s, std::string* out) {
  Appendf(out, "%s: %s: %" PRIu64 " samples taken (%" PRIu64 " delivered, %" PRIu64 " lost)", name,
          s.label.c_str(), s.samples_taken, s.samples, s.lost_samples);
  if (s.duration_ns) Appendf(out, ", %.3f s", static_cast<double>(s.duration_ns) / 1e9);
  if (!s.frequency_hz.empty()) Appendf(out, ", %s Hz", s.frequency_hz.c_str());
  *out += "\n";
}

void TextDiff(const DiffData& d, size_t shown, std::string* out) {
  TextSide("A", d.a, out);
  TextSide("B", d.b, out);
  Appendf(out,
          "A%%, B%%: share of each profile's samples taken; DELTA: B%% - A%% in percentage "
          "points; DIFF: B - A in samples\n\n");
  const bool functions = d.by == DiffBy::kFunction;
  Appendf(out, "%8s %7s %7s %10s %10s %10s  %-16s%s\n", "DELTA", "A%", "B%", "SAMPLES A",
          "SAMPLES B", "DIFF", "PROCESS", functions ? " SPACE                FUNCTION" : "");
  for (size_t i = 0; i < shown; ++i) {
    const DiffRow& r = d.rows[i];
    Appendf(out, "%+8.2f %7.2f %7.2f %10" PRIu64 " %10" PRIu64 " %+10" PRId64 "  %-16s",
            r.delta_points(), r.percent_a, r.percent_b, r.samples_a, r.samples_b,
            r.delta_samples(), r.process.c_str());
    if (functions)
      Appendf(out, " %-20s %s", ShortSpaceName(r.space).c_str(), r.function.c_str());
    *out += "\n";
  }
  if (d.rows.empty()) *out += "(no samples in either profile)\n";
  if (shown < d.rows.size())
    Appendf(out, "(%zu more rows: raise --top)\n", d.rows.size() - shown);
}

Json JsonSide(const DiffSide& s) {
  Json j = {{"path", s.label},
            {"samples_taken", s.samples_taken},
            {"samples", s.samples},
            {"lost_samples", s.lost_samples},
            {"duration_ns", s.duration_ns}};
  uint64_t hz = 0;
  const char* begin = s.frequency_hz.data();
  const char* end = begin + s.frequency_hz.size();
  if (auto [ptr, ec] = std::from_chars(begin, end, hz); ec == std::errc() && ptr == end && hz)
    j["frequency_hz"] = hz;
  return j;
}

void JsonDiff(const DiffData& d, const DiffOptions& o, size_t shown, std::string* out) {
  constexpr int kPlaces = 4;
  Json j;
  j["format_version"] = kDiffJsonFormatVersion;
  j["by"] = ByName(d.by);
  if (o.pid) j["pid"] = *o.pid;
  j["a"] = JsonSide(d.a);
  j["b"] = JsonSide(d.b);
  j["rows_total"] = d.rows.size();
  Json rows = Json::array();
  for (size_t i = 0; i < shown; ++i) {
    const DiffRow& r = d.rows[i];
    Json row = {{"process", r.process}};
    if (d.by == DiffBy::kFunction) {
      row["space"] = r.space;
      row["function"] = r.function;
    }
    row["samples_a"] = r.samples_a;
    row["samples_b"] = r.samples_b;
    row["delta_samples"] = r.delta_samples();
    row["percent_a"] = RoundDecimal(r.percent_a, kPlaces);
    row["percent_b"] = RoundDecimal(r.percent_b, kPlaces);
    row["delta_points"] = RoundDecimal(r.delta_points(), kPlaces);
    rows.push_back(std::move(row));
  }
  j["rows"] = std::move(rows);
  *out += j.dump();
  *out += "\n";
}

}  // namespace

std::vector<DiffRow> DiffReports(const ReportData& a, const ReportData& b, DiffBy by) {
  std::map<RowKey, std::pair<uint64_t, uint64_t>> merged;
  for (const auto& [key, n] : Rows(a, by)) merged[key].first += n;
  for (const auto& [key, n] : Rows(b, by)) merged[key].second += n;
  std::vector<DiffRow> rows;
  rows.reserve(merged.size());
  for (const auto& [key, counts] : merged) {
    DiffRow r;
    std::tie(r.process, r.space, r.function) = key;
    r.samples_a = counts.first;
    r.samples_b = counts.second;
    r.percent_a = Percent(r.samples_a, a.all_samples);
    r.percent_b = Percent(r.samples_b, b.all_samples);
    rows.push_back(std::move(r));
  }
  // Largest change first, compared exactly: every row has the same bases,
  // so |b/B - a/A| orders as |b*A - a*B| (doubles could split a tie).
  // Among equal changes the busier row, then by name (the map's order,
  // kept by the stable sort).
  const uint64_t base_a = a.all_samples, base_b = b.all_samples;
  auto change = [base_a, base_b](const DiffRow& r) -> unsigned __int128 {
    if (!base_a) return base_b ? r.samples_b : 0;
    if (!base_b) return r.samples_a;
    unsigned __int128 x = static_cast<unsigned __int128>(r.samples_b) * base_a;
    unsigned __int128 y = static_cast<unsigned __int128>(r.samples_a) * base_b;
    return x > y ? x - y : y - x;
  };
  std::stable_sort(rows.begin(), rows.end(), [&change](const DiffRow& x, const DiffRow& y) {
    unsigned __int128 cx = change(x), cy = change(y);
    if (cx != cy) return cx > cy;
    return x.samples_a + x.samples_b > y.samples_a + y.samples_b;
  });
  return rows;
}

DiffData BuildDiff(const DiffInput& a, const DiffInput& b, const DiffOptions& options) {
  ReportOptions ro;
  ro.pid = options.pid;
  ReportData ra = BuildReport(a.profile, a.symbolizer, ro);
  ReportData rb = BuildReport(b.profile, b.symbolizer, ro);
  DiffData d;
  d.by = options.by;
  d.a = Side(a, ra);
  d.b = Side(b, rb);
  d.rows = DiffReports(ra, rb, options.by);
  return d;
}

std::string RenderDiff(const DiffData& diff, const DiffOptions& options, DiffFormat format) {
  const size_t shown = options.top ? std::min(options.top, diff.rows.size()) : diff.rows.size();
  std::string out;
  if (format == DiffFormat::kJson)
    JsonDiff(diff, options, shown, &out);
  else
    TextDiff(diff, shown, &out);
  return out;
}

}  // namespace tprof
