// Base64 (RFC 4648, standard alphabet, '=' padding): binary data on one
// line of the profile file (its alphabet needs no escaping there).
#ifndef TPROF_SRC_BASE64_H_
#define TPROF_SRC_BASE64_H_

#include <optional>
#include <string>
#include <string_view>

namespace tprof {

[[nodiscard]] std::string Base64Encode(std::string_view bytes);
// The bytes, or nullopt if `text` is not padded base64 of the standard
// alphabet (no whitespace).
[[nodiscard]] std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace tprof

#endif  // TPROF_SRC_BASE64_H_
