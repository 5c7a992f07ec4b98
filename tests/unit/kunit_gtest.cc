// The KUnit suites of kmod/core's units (ktests/<unit>_kunit.c, compiled
// against tests/unit/kunit/kunit/test.h) as GoogleTest tests: one test per
// case, named KUnit_<suite>.<case>; a parameterized case runs every
// parameter and names the failing one.
#include <gtest/gtest.h>

#include <string>

// The structures as the suites see them (the header is C that C++ reads).
extern "C" {
#include "kunit/test.h"
}
#include "kunit_runner.h"

namespace {

class KUnitCase : public testing::Test {
 public:
  explicit KUnitCase(const kunit_case* c) : case_(c) {}
  void TestBody() override { tprof_kunit_run(case_); }

 private:
  const kunit_case* case_;
};

}  // namespace

extern "C" void tprof_kunit_register(struct kunit_suite** suites) {
  for (; *suites; ++suites) {
    const std::string suite = std::string("KUnit_") + (*suites)->name;
    for (const kunit_case* c = (*suites)->test_cases; c->run_case; ++c) {
      testing::RegisterTest(suite.c_str(), c->name, nullptr, nullptr, __FILE__, __LINE__,
                            [c]() -> testing::Test* { return new KUnitCase(c); });
    }
  }
}

extern "C" void tprof_kunit_fail(struct kunit* test, const char* file, int line,
                                 const char* check, unsigned long long a, unsigned long long b,
                                 const char* msg) {
  ADD_FAILURE_AT(file, line) << "expected " << check << " (left "
                             << static_cast<long long>(a) << ", right " << static_cast<long long>(b)
                             << ")" << (msg ? std::string(": ") + msg : std::string())
                             << (test->param_desc && *test->param_desc
                                     ? std::string(", parameter ") + test->param_desc
                                     : std::string());
}
