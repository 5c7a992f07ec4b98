// Value-or-error returns. The library never throws for expected failures
// and never aborts: every failure is an Error carrying the errno (so a
// caller can tell ENOTTY from EPERM) and a message that says what to do.
#ifndef TPROF_EXPECTED_H_
#define TPROF_EXPECTED_H_

#include <string>
#include <system_error>
#include <utility>
#include <variant>

namespace tprof {

class Error {
 public:
  Error(std::error_code code, std::string message)
      : code_(code), message_(std::move(message)) {}
  // An Error from an errno value, with a message giving the context.
  static Error FromErrno(int err, std::string message) {
    return Error(std::error_code(err, std::system_category()),
                 std::move(message));
  }

  const std::error_code& code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  std::error_code code_;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// For operations that return nothing but can fail. Both are [[nodiscard]]:
// a dropped result is a dropped error; (void) says it is meant.
using Status = Expected<std::monostate>;
inline Status OkStatus() { return std::monostate{}; }

}  // namespace tprof

#endif  // TPROF_EXPECTED_H_
