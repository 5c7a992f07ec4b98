// A small validating JSON parser for tests: parses a whole document into a
// tree, or reports where it is malformed. Tests use it to check that
// tprofctl's --json output is valid and holds what users rely on.
#ifndef TPROF_TESTS_COMMON_JSON_VALUE_H_
#define TPROF_TESTS_COMMON_JSON_VALUE_H_

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tprof::test {

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject } type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::map<std::string, JsonValue> object;

  bool Has(const std::string& key) const { return object.count(key) != 0; }
  const JsonValue& operator[](const std::string& key) const { return object.at(key); }
};

class JsonParser {
 public:
  // Parses text; on failure returns nullopt and sets *error.
  static std::optional<JsonValue> Parse(const std::string& text, std::string* error) {
    JsonParser p(text);
    JsonValue v;
    if (!p.ParseValue(&v, 0) || (p.SkipSpace(), p.pos_ != text.size())) {
      if (error) *error = "malformed JSON at offset " + std::to_string(p.pos_);
      return std::nullopt;
    }
    return v;
  }

 private:
  explicit JsonParser(const std::string& text) : s_(text) {}

  void SkipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool Eat(char c) {
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Literal(const char* word) {
    std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }
  bool ParseString(std::string* out) {
    if (!Eat('"')) return false;
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c == '\\') {
        if (pos_ >= s_.size()) return false;
        char e = s_[pos_++];
        switch (e) {
          case '"': case '\\': case '/': *out += e; break;
          case 'n': *out += '\n'; break;
          case 't': *out += '\t'; break;
          case 'r': *out += '\r'; break;
          case 'b': *out += '\b'; break;
          case 'f': *out += '\f'; break;
          case 'u': {
            if (pos_ + 4 > s_.size()) return false;
            for (int i = 0; i < 4; ++i)
              if (!std::isxdigit(static_cast<unsigned char>(s_[pos_ + i]))) return false;
            long cp = std::strtol(s_.substr(pos_, 4).c_str(), nullptr, 16);
            *out += cp < 0x80 ? static_cast<char>(cp) : '?';
            pos_ += 4;
            break;
          }
          default: return false;
        }
      } else {
        *out += c;
      }
    }
    return false;
  }
  bool ParseValue(JsonValue* v, int depth) {
    if (depth > 64) return false;
    SkipSpace();
    if (pos_ >= s_.size()) return false;
    char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      v->type = JsonValue::Type::kObject;
      if (Eat('}')) return true;
      do {
        std::string key;
        SkipSpace();
        if (!ParseString(&key) || !Eat(':')) return false;
        JsonValue member;
        if (!ParseValue(&member, depth + 1)) return false;
        if (v->object.count(key)) return false;  // duplicate keys are a bug here
        v->object.emplace(key, std::move(member));
      } while (Eat(','));
      return Eat('}');
    }
    if (c == '[') {
      ++pos_;
      v->type = JsonValue::Type::kArray;
      if (Eat(']')) return true;
      do {
        JsonValue element;
        if (!ParseValue(&element, depth + 1)) return false;
        v->array.push_back(std::move(element));
      } while (Eat(','));
      return Eat(']');
    }
    if (c == '"') {
      v->type = JsonValue::Type::kString;
      return ParseString(&v->string);
    }
    if (Literal("true")) { v->type = JsonValue::Type::kBool; v->boolean = true; return true; }
    if (Literal("false")) { v->type = JsonValue::Type::kBool; return true; }
    if (Literal("null")) return true;
    const char* begin = s_.c_str() + pos_;
    if (!(c == '-' || std::isdigit(static_cast<unsigned char>(c)))) return false;
    char* end = nullptr;
    v->type = JsonValue::Type::kNumber;
    v->number = std::strtod(begin, &end);
    if (end == begin) return false;
    pos_ += static_cast<size_t>(end - begin);
    return true;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace tprof::test

#endif  // TPROF_TESTS_COMMON_JSON_VALUE_H_
