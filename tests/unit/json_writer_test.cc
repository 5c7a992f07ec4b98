#include "tprof/json_writer.h"

#include <gtest/gtest.h>

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

TEST(JsonParser, RejectsMalformedDocuments) {
  for (const char* bad : {"{", "{\"a\":}", "[1,]", "{\"a\":1}x", "\"\x01\"", "{\"a\":1,\"a\":2}"})
    EXPECT_FALSE(JsonParser::Parse(bad, nullptr)) << bad;
}

}  // namespace
