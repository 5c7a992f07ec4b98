// Which function rows a report table shows: their order (--sort) and the
// cut (--percent-limit, --top), with the rows left out summed per space,
// so a table of 120 functions, 40 of them one-sample rows of the dynamic
// loader, reads as its hot rows and "(40 more in ld-linux-x86-64.so.2)".
// Internal: not installed with the public headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tprof/output/report.h"

namespace tprof {

// Orders a process's rows by `sort`; ties by more samples, then by space
// and name, so every order is the same from run to run.
void OrderFunctionRows(ReportSort sort, bool children, std::vector<FunctionRow>* rows);

// The rows of one space a table left out.
struct LeftOutRows {
  const FunctionRow* first = nullptr;  // the space's first row left out (its Location)
  size_t functions = 0;
  uint64_t samples = 0;  // self (inclusive samples do not add up: a stack holds several)
};

struct FunctionTableCut {
  std::vector<size_t> shown;       // indices into the rows, in their order
  std::vector<LeftOutRows> left_out;  // by samples, descending
};

// Shows the rows whose samples (children: inclusive samples) are at least
// `percent` of the process's, the first `top` of those (0: all).
[[nodiscard]] FunctionTableCut CutFunctionRows(const std::vector<FunctionRow>& rows,
                                               uint64_t process_samples, double percent,
                                               size_t top, bool children);

}  // namespace tprof
