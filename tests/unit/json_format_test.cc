// Percentages in tprofctl's JSON are decimal numbers a reader can use as
// they are (61.4, not 6140 basis points), the same in every locale.
#include "tprof/output/json_format.h"

#include <gtest/gtest.h>

#include <clocale>

#include "../common/json.h"

namespace {

TEST(JsonFormat, PercentagesAreRoundedDecimals) {
  EXPECT_EQ(tprof::DecimalPercent(614, 1000), 61.4);
  EXPECT_EQ(tprof::DecimalPercent(1, 3), 33.33);
  EXPECT_EQ(tprof::DecimalPercent(1, 3, 4), 33.3333);
  EXPECT_EQ(tprof::DecimalPercent(5, 0), 0) << "no samples is 0%, not NaN";
  EXPECT_EQ(tprof::RoundDecimal(-29.99996, 4), -30.0);
}

TEST(JsonFormat, PercentagesAreWrittenWithAPointInEveryLocale) {
  const char* de = std::setlocale(LC_NUMERIC, "de_DE.UTF-8");
  tprof::test::Json j = {{"percent", tprof::DecimalPercent(614, 1000)}};
  EXPECT_EQ(j.dump(), R"({"percent":61.4})") << "locale " << (de ? de : "C (de_DE missing)");
  std::setlocale(LC_NUMERIC, "C");
}

}  // namespace
