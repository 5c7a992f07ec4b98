#include "output/function_rows.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace tprof {

void OrderFunctionRows(ReportSort sort, bool children, std::vector<FunctionRow>* rows) {
  auto weight = [children](const FunctionRow& r) { return children ? r.inclusive : r.samples; };
  auto heavier = [&weight](const FunctionRow& a, const FunctionRow& b) {
    if (weight(a) != weight(b)) return weight(a) > weight(b);
    if (a.samples != b.samples) return a.samples > b.samples;
    return std::tie(a.space, a.function) < std::tie(b.space, b.function);
  };
  switch (sort) {
    case ReportSort::kSamples:
      std::sort(rows->begin(), rows->end(), heavier);
      break;
    case ReportSort::kFunction:
      std::sort(rows->begin(), rows->end(), [&heavier](const FunctionRow& a, const FunctionRow& b) {
        return a.function != b.function ? a.function < b.function : heavier(a, b);
      });
      break;
    case ReportSort::kSpace: {
      // Spaces heaviest first (their rows' total), each space's rows by weight.
      std::map<std::string, uint64_t> total;
      for (const FunctionRow& r : *rows) total[r.space] += weight(r);
      std::sort(rows->begin(), rows->end(), [&](const FunctionRow& a, const FunctionRow& b) {
        if (a.space == b.space) return heavier(a, b);
        const uint64_t ta = total[a.space], tb = total[b.space];
        return ta != tb ? ta > tb : a.space < b.space;
      });
      break;
    }
  }
}

FunctionTableCut CutFunctionRows(const std::vector<FunctionRow>& rows, uint64_t process_samples,
                                 double percent, size_t top, bool children) {
  FunctionTableCut cut;
  std::map<std::string, LeftOutRows> left_out;
  const double floor = percent / 100.0 * static_cast<double>(process_samples);
  for (size_t i = 0; i < rows.size(); ++i) {
    const FunctionRow& r = rows[i];
    const uint64_t weight = children ? r.inclusive : r.samples;
    if (static_cast<double>(weight) >= floor && (top == 0 || cut.shown.size() < top)) {
      cut.shown.push_back(i);
      continue;
    }
    LeftOutRows& l = left_out[r.space];
    if (!l.first) l.first = &r;
    ++l.functions;
    l.samples += r.samples;
  }
  for (auto& [space, l] : left_out) cut.left_out.push_back(l);
  std::stable_sort(cut.left_out.begin(), cut.left_out.end(),
                   [](const LeftOutRows& a, const LeftOutRows& b) { return a.samples > b.samples; });
  return cut;
}

}  // namespace tprof
