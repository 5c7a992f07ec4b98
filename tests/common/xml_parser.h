// A small validating XML parser for tests: checks that a document is
// well-formed (one root element, tags that nest and match, quoted and
// unique attributes, known entities, no raw '<' or '&' in text) and
// returns its element tree. Enough for the SVG flame graph; no DTDs.
#ifndef TPROF_TESTS_COMMON_XML_PARSER_H_
#define TPROF_TESTS_COMMON_XML_PARSER_H_

#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tprof::test {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;  // values unescaped
  std::vector<XmlElement> children;
  std::string text;  // all character data directly inside, unescaped

  // Every element below this one (depth first) named `name`.
  void FindAll(const std::string& element, std::vector<const XmlElement*>* out) const {
    for (const XmlElement& c : children) {
      if (c.name == element) out->push_back(&c);
      c.FindAll(element, out);
    }
  }
  const XmlElement* Child(const std::string& element) const {
    for (const XmlElement& c : children)
      if (c.name == element) return &c;
    return nullptr;
  }
  std::string Attr(const std::string& key) const {
    auto it = attributes.find(key);
    return it == attributes.end() ? "" : it->second;
  }
};

class XmlParser {
 public:
  // Parses text; on failure returns nullopt and sets *error.
  static std::optional<XmlElement> Parse(const std::string& text, std::string* error) {
    XmlParser p(text);
    XmlElement root;
    bool ok = p.Prolog() && p.Element(&root, 0);
    if (ok) {
      p.Misc();
      ok = p.pos_ == text.size();
      if (!ok) p.error_ = "content after the root element";
    }
    if (!ok) {
      if (error) *error = p.error_ + " at offset " + std::to_string(p.pos_);
      return std::nullopt;
    }
    return root;
  }

 private:
  explicit XmlParser(const std::string& text) : s_(text) {}

  bool Fail(const std::string& why) {
    if (error_.empty()) error_ = why;
    return false;
  }
  bool StartsWith(const char* prefix) const {
    return s_.compare(pos_, std::char_traits<char>::length(prefix), prefix) == 0;
  }
  void SkipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  // Skips to after `end`; false if it never comes.
  bool SkipPast(const char* end) {
    size_t at = s_.find(end, pos_);
    if (at == std::string::npos) return Fail(std::string("no ") + end);
    pos_ = at + std::char_traits<char>::length(end);
    return true;
  }
  // Comments and processing instructions between elements.
  bool Misc() {
    for (;;) {
      SkipSpace();
      if (StartsWith("<!--")) {
        if (!SkipPast("-->")) return false;
      } else if (StartsWith("<?")) {
        if (!SkipPast("?>")) return false;
      } else {
        return true;
      }
    }
  }
  bool Prolog() {
    if (!Misc()) return false;
    if (StartsWith("<!DOCTYPE") && !SkipPast(">")) return false;
    return Misc();
  }
  bool Name(std::string* out) {
    size_t start = pos_;
    while (pos_ < s_.size()) {
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (std::isalnum(c) || c == '_' || c == ':' || c == '-' || c == '.' || c >= 0x80)
        ++pos_;
      else
        break;
    }
    if (pos_ == start || std::isdigit(static_cast<unsigned char>(s_[start])) || s_[start] == '-')
      return Fail("expected a name");
    *out = s_.substr(start, pos_ - start);
    return true;
  }
  // An entity or character reference after '&'.
  bool Reference(std::string* out) {
    size_t semi = s_.find(';', pos_);
    if (semi == std::string::npos || semi - pos_ > 12) return Fail("unterminated '&'");
    std::string ref = s_.substr(pos_ + 1, semi - pos_ - 1);
    static const std::map<std::string, char> kEntities = {
        {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
    if (auto it = kEntities.find(ref); it != kEntities.end()) {
      *out += it->second;
    } else if (ref.size() > 1 && ref[0] == '#') {
      bool hex = ref[1] == 'x';
      std::string digits = ref.substr(hex ? 2 : 1);
      if (digits.empty()) return Fail("empty character reference");
      char* end = nullptr;
      long cp = std::strtol(digits.c_str(), &end, hex ? 16 : 10);
      if (*end || cp <= 0 || cp > 0x10ffff) return Fail("bad character reference &" + ref + ";");
      if (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r')
        return Fail("character reference to a control character");
      *out += cp < 0x80 ? static_cast<char>(cp) : '?';  // tests read ASCII
    } else {
      return Fail("unknown entity &" + ref + ";");
    }
    pos_ = semi + 1;
    return true;
  }
  bool Element(XmlElement* e, int depth) {
    if (depth > 200) return Fail("nesting too deep");
    if (!StartsWith("<")) return Fail("expected '<'");
    ++pos_;
    if (!Name(&e->name)) return false;
    for (;;) {
      size_t before = pos_;
      SkipSpace();
      if (StartsWith("/>")) {
        pos_ += 2;
        return true;
      }
      if (StartsWith(">")) {
        ++pos_;
        break;
      }
      if (pos_ == before) return Fail("expected space between attributes");
      std::string key, value;
      if (!Name(&key)) return false;
      SkipSpace();
      if (!StartsWith("=")) return Fail("attribute without '='");
      ++pos_;
      SkipSpace();
      if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\''))
        return Fail("unquoted attribute");
      const char quote = s_[pos_++];
      while (pos_ < s_.size() && s_[pos_] != quote) {
        if (s_[pos_] == '<') return Fail("'<' in an attribute value");
        if (s_[pos_] == '&') {
          if (!Reference(&value)) return false;
        } else {
          value += s_[pos_++];
        }
      }
      if (pos_ >= s_.size()) return Fail("unterminated attribute value");
      ++pos_;
      if (!e->attributes.emplace(key, value).second) return Fail("duplicate attribute " + key);
    }
    // Content up to the matching end tag.
    for (;;) {
      if (pos_ >= s_.size()) return Fail("unclosed <" + e->name + ">");
      if (StartsWith("</")) {
        pos_ += 2;
        std::string end;
        if (!Name(&end)) return false;
        if (end != e->name) return Fail("</" + end + "> closes <" + e->name + ">");
        SkipSpace();
        if (!StartsWith(">")) return Fail("expected '>'");
        ++pos_;
        return true;
      }
      if (StartsWith("<![CDATA[")) {
        size_t at = s_.find("]]>", pos_);
        if (at == std::string::npos) return Fail("unterminated CDATA");
        e->text += s_.substr(pos_ + 9, at - pos_ - 9);
        pos_ = at + 3;
      } else if (StartsWith("<!--")) {
        if (!SkipPast("-->")) return false;
      } else if (StartsWith("<?")) {
        if (!SkipPast("?>")) return false;
      } else if (StartsWith("<")) {
        e->children.emplace_back();
        if (!Element(&e->children.back(), depth + 1)) return false;
      } else if (s_[pos_] == '&') {
        if (!Reference(&e->text)) return false;
      } else {
        if (StartsWith("]]>")) return Fail("']]>' in text");
        e->text += s_[pos_++];
      }
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace tprof::test

#endif  // TPROF_TESTS_COMMON_XML_PARSER_H_
