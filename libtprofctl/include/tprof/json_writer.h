// A small streaming JSON writer for tprofctl's --json output: objects,
// arrays, strings (escaped), integers, fixed-point decimals and booleans. Commas are inserted
// for the caller; nesting mistakes are programming errors (asserted).
#ifndef TPROF_JSON_WRITER_H_
#define TPROF_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace tprof {

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Uint(uint64_t value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Bool(bool value);
  // A decimal number with `places` digits after the point ("12.50" for
  // 12.5, 2), written the same in every locale; null if not finite.
  JsonWriter& Decimal(double value, int places);

  // Key and value in one call, inside an object.
  template <typename T>
  JsonWriter& Field(std::string_view key, const T& value);

  const std::string& str() const { return out_; }

  static std::string Escape(std::string_view s);

 private:
  void BeforeValue();

  std::string out_;
  // One entry per open container: whether it already holds an element.
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

template <typename T>
JsonWriter& JsonWriter::Field(std::string_view key, const T& value) {
  Key(key);
  if constexpr (std::is_same_v<T, bool>)
    return Bool(value);
  else if constexpr (std::is_unsigned_v<T>)
    return Uint(value);
  else if constexpr (std::is_integral_v<T>)
    return Int(value);
  else
    return String(value);
}

}  // namespace tprof

#endif  // TPROF_JSON_WRITER_H_
