// gzip and base64: what the profile file's vdso-gz line is made of.
#include "tprof/base/gzip.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "../../libtprofctl/src/base/base64.h"

namespace {

TEST(Gunzip, ReadsWhatGzipWroteAndChecksTheBounds) {
  std::string data;
  for (int i = 0; i < 5000; ++i) data += static_cast<char>(i * 7 % 251);
  auto gz = tprof::Gzip(data);
  ASSERT_TRUE(gz) << gz.error().message();
  auto back = tprof::Gunzip(*gz, data.size());
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(*back, data);

  auto small = tprof::Gunzip(*gz, data.size() - 1);
  ASSERT_FALSE(small) << "more than max_bytes";
  EXPECT_EQ(small.error().code().value(), EFBIG);
  for (const std::string& bad : {gz->substr(0, gz->size() - 1), *gz + "x", std::string("plain text"),
                                 std::string()}) {
    auto r = tprof::Gunzip(bad, data.size());
    ASSERT_FALSE(r) << bad.size() << " bytes";
    EXPECT_EQ(r.error().code().value(), EBADMSG) << r.error().message();
  }
}

TEST(Base64, MatchesRfc4648AndRefusesWhatIsNotIt) {
  // RFC 4648 section 10's test vectors.
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},        {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(tprof::Base64Encode(plain), encoded);
    EXPECT_EQ(tprof::Base64Decode(encoded), std::string(plain)) << encoded;
  }
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  EXPECT_EQ(tprof::Base64Decode(tprof::Base64Encode(bytes)), bytes);
  for (const char* bad : {"Zg=", "Zg", "Z===", "=Zg=", "Zm9v\n", "Zm 9", "Zm9%", "Zg==Zm9v"})
    EXPECT_FALSE(tprof::Base64Decode(bad)) << bad;
}

}  // namespace
