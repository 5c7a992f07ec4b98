// Small text helpers shared by the library's renderers (reports, diff,
// flame graph, annotate) and the symbolizer. Internal: not installed with
// the public headers.
#pragma once

#include <cstdint>
#include <string>

namespace tprof::text {

// printf into the end of *out, whatever the length.
void Appendf(std::string* out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// The last component of a path ("libc.so.6" for "/lib/x86_64-linux-gnu/libc.so.6").
std::string BaseName(const std::string& path);

// part as a percentage of whole; 0 when whole is 0.
inline double Percent(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

}  // namespace tprof::text
