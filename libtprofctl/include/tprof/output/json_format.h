// What every JSON document tprofctl and the library write has in common
// (README, "JSON output"): a top-level "format_version", raised when a
// field changes meaning or goes away (adding fields keeps it), and
// percentages as decimal numbers (61.38, not basis points).
#ifndef TPROF_JSON_FORMAT_H_
#define TPROF_JSON_FORMAT_H_

#include <cstdint>

namespace tprof {

inline constexpr int kJsonFormatVersion = 1;

// part as a percentage of whole, rounded to `places` decimals; 0 when
// whole is 0.
double DecimalPercent(uint64_t part, uint64_t whole, int places = 2);
// value rounded to `places` decimals (a percentage computed elsewhere).
double RoundDecimal(double value, int places);

}  // namespace tprof

#endif  // TPROF_JSON_FORMAT_H_
