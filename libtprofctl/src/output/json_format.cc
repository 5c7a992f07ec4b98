#include "tprof/output/json_format.h"

#include <cmath>

namespace tprof {

double RoundDecimal(double value, int places) {
  if (!std::isfinite(value)) return value;  // nlohmann writes null
  const double scale = std::pow(10.0, places);
  return std::round(value * scale) / scale;
}

double DecimalPercent(uint64_t part, uint64_t whole, int places) {
  if (whole == 0) return 0;
  return RoundDecimal(100.0 * static_cast<double>(part) / static_cast<double>(whole), places);
}

}  // namespace tprof
