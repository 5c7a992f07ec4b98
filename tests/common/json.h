// JSON in the tests: nlohmann::json (the library writes with it too, but a
// parse here still proves the output is one valid document). ParseJson
// reports a malformed document instead of throwing.
#ifndef TPROF_TESTS_COMMON_JSON_H_
#define TPROF_TESTS_COMMON_JSON_H_

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace tprof::test {

using Json = nlohmann::json;

inline std::optional<Json> ParseJson(const std::string& text, std::string* error) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    if (error) *error = e.what();
    return std::nullopt;
  }
}

}  // namespace tprof::test

#endif  // TPROF_TESTS_COMMON_JSON_H_
