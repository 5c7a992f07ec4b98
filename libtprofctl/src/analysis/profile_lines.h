// The profile file's lines (profile_file.h): one item per line, fields
// separated by a TAB, numbers in decimal or hex, strings percent-escaped.
// LineWriter builds a line; LineReader splits one and records the first
// malformed field instead of failing at each.
#ifndef TPROF_ANALYSIS_PROFILE_LINES_H_
#define TPROF_ANALYSIS_PROFILE_LINES_H_

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace tprof {

inline void AppendEscaped(std::string* out, std::string_view s) {
  static const char kHex[] = "0123456789ABCDEF";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '%' || c < 0x20 || c == 0x7f) {
      *out += '%';
      *out += kHex[c >> 4];
      *out += kHex[c & 15];
    } else {
      *out += ch;
    }
  }
}

inline bool Unescape(std::string_view s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      *out += s[i];
      continue;
    }
    unsigned v = 0;
    if (i + 2 >= s.size()) return false;
    auto r = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
    if (r.ec != std::errc() || r.ptr != s.data() + i + 3) return false;
    *out += static_cast<char>(v);
    i += 2;
  }
  return true;
}

// Builds one line: Tag(...) then fields, each preceded by a TAB.
class LineWriter {
 public:
  explicit LineWriter(std::string* out) : out_(out) {}
  LineWriter& Tag(const char* tag) {
    *out_ += tag;
    return *this;
  }
  LineWriter& Dec(uint64_t v) {
    *out_ += '\t';
    *out_ += std::to_string(v);
    return *this;
  }
  LineWriter& Hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof(buf), "\t%llx", static_cast<unsigned long long>(v));
    *out_ += buf;
    return *this;
  }
  LineWriter& Pair(uint64_t a, uint64_t b) {
    *out_ += '\t';
    *out_ += std::to_string(a);
    *out_ += ':';
    *out_ += std::to_string(b);
    return *this;
  }
  LineWriter& Str(std::string_view s) {
    *out_ += '\t';
    AppendEscaped(out_, s);
    return *this;
  }
  void End() { *out_ += '\n'; }

 private:
  std::string* out_;
};

// The fields of one line, with typed accessors that record the first error.
class LineReader {
 public:
  explicit LineReader(std::string_view line) {
    size_t start = 0;
    while (true) {
      size_t tab = line.find('\t', start);
      fields_.push_back(line.substr(start, tab == std::string_view::npos ? tab : tab - start));
      if (tab == std::string_view::npos) break;
      start = tab + 1;
    }
  }
  std::string_view tag() const { return fields_[0]; }
  bool ok() const { return ok_; }
  size_t size() const { return fields_.size(); }
  // "A" or "A:B" (decimal); B defaults to 1.
  bool Pair(size_t i, uint64_t* a, uint64_t* b) {
    std::string_view f = fields_[i];
    const size_t colon = f.find(':');
    *b = 1;
    if (colon != std::string_view::npos) {
      std::string_view count = f.substr(colon + 1);
      auto rb = std::from_chars(count.data(), count.data() + count.size(), *b);
      if (count.empty() || rb.ec != std::errc() || rb.ptr != count.data() + count.size())
        return ok_ = false;
      f = f.substr(0, colon);
    }
    auto ra = std::from_chars(f.data(), f.data() + f.size(), *a);
    if (f.empty() || ra.ec != std::errc() || ra.ptr != f.data() + f.size()) return ok_ = false;
    return true;
  }

  uint64_t Dec(size_t i) { return Number(i, 10); }
  uint64_t Hex(size_t i) { return Number(i, 16); }
  uint32_t Dec32(size_t i) {
    uint64_t v = Dec(i);
    if (v > UINT32_MAX) ok_ = false;
    return static_cast<uint32_t>(v);
  }
  std::string Str(size_t i) {
    std::string s;
    if (i >= fields_.size() || !Unescape(fields_[i], &s)) ok_ = false;
    return s;
  }

 private:
  uint64_t Number(size_t i, int base) {
    uint64_t v = 0;
    if (i >= fields_.size()) {
      ok_ = false;
      return 0;
    }
    std::string_view f = fields_[i];
    auto r = std::from_chars(f.data(), f.data() + f.size(), v, base);
    if (f.empty() || r.ec != std::errc() || r.ptr != f.data() + f.size()) ok_ = false;
    return v;
  }

  std::vector<std::string_view> fields_;
  bool ok_ = true;
};

}  // namespace tprof

#endif  // TPROF_ANALYSIS_PROFILE_LINES_H_
