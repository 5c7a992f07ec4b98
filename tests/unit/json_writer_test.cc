#include "tprof/json_writer.h"

#include <gtest/gtest.h>

#include <limits>

#include "../common/json_value.h"

namespace {

using tprof::JsonWriter;
using tprof::test::JsonParser;

TEST(JsonWriter, NestedContainersGetCommasOnlyBetweenElements) {
  JsonWriter w;
  w.BeginObject().Field("a", 1u).Key("list").BeginArray().Uint(1).Uint(2).EndArray();
  w.Key("empty").BeginObject().EndObject().Field("ok", true).Field("name", std::string("x"));
  w.EndObject();
  EXPECT_EQ(w.str(), R"({"a":1,"list":[1,2],"empty":{},"ok":true,"name":"x"})");
}

TEST(JsonWriter, EscapesEverythingJsonRequires) {
  EXPECT_EQ(JsonWriter::Escape("a\"b\\c\n\t\x01"), R"("a\"b\\c\n\t\u0001")");
}

TEST(JsonWriter, OutputParsesBackWithHostileStrings) {
  JsonWriter w;
  w.BeginObject().Field("comm", std::string("we\"ird\\\x7f\x1f name")).Field("n", -5).EndObject();
  std::string error;
  auto v = JsonParser::Parse(w.str(), &error);
  ASSERT_TRUE(v) << error << ": " << w.str();
  EXPECT_EQ((*v)["comm"].string, "we\"ird\\\x7f\x1f name");
  EXPECT_EQ((*v)["n"].number, -5);
}

TEST(JsonWriter, DecimalsHaveFixedPlacesAndParseBack) {
  JsonWriter w;
  w.BeginArray().Decimal(12.5, 2).Decimal(-3.26, 1).Decimal(100.0 / 3.0, 4).Decimal(-0.0001, 2);
  w.Decimal(std::numeric_limits<double>::quiet_NaN(), 2).EndArray();
  EXPECT_EQ(w.str(), "[12.50,-3.3,33.3333,0.00,null]");
  std::string error;
  auto v = JsonParser::Parse(w.str(), &error);
  ASSERT_TRUE(v) << error << ": " << w.str();
  EXPECT_DOUBLE_EQ(v->array.at(0).number, 12.5);
}

TEST(JsonParser, RejectsMalformedDocuments) {
  for (const char* bad : {"{", "{\"a\":}", "[1,]", "{\"a\":1}x", "\"\x01\"", "{\"a\":1,\"a\":2}"})
    EXPECT_FALSE(JsonParser::Parse(bad, nullptr)) << bad;
}

}  // namespace
