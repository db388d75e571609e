#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "io/json.h"

using namespace hkt;
using Catch::Contains;

TEST_CASE("json: parses every kind of value and keeps object order") {
  Json doc = parse_json(R"( {"z": 1, "a": [true, false, null, "s", -2.5e1, {}], "m": {"k": []}} )");
  REQUIRE(doc.is_object());
  REQUIRE(doc.size() == 3);
  CHECK(doc.as_object()[0].first == "z");
  CHECK(doc.as_object()[1].first == "a");
  CHECK(doc.as_object()[2].first == "m");
  const Json& items = doc.at("a");
  REQUIRE(items.size() == 6);
  CHECK(items.at(0).as_bool());
  CHECK_FALSE(items.at(1).as_bool());
  CHECK(items.at(2).is_null());
  CHECK(items.at(3).as_string() == "s");
  CHECK(items.at(4).as_number() == -25.0);
  CHECK(items.at(5).is_object());
  CHECK(items.at(5).size() == 0);
  CHECK(doc.at("m").at("k").is_array());
  CHECK(doc.contains("m"));
  CHECK_FALSE(doc.contains("q"));
  CHECK(to_json(doc) == R"({"z":1,"a":[true,false,null,"s",-25,{}],"m":{"k":[]}})");
  CHECK(parse_json(to_json(doc)) == doc);
  CHECK(parse_json(" \t\r\n7 \n").as_int() == 7);
}

TEST_CASE("json: string escapes, \\u escapes and UTF-8") {
  CHECK(parse_json(R"("\"\\\/\b\f\n\r\t")").as_string() == "\"\\/\b\f\n\r\t");
  CHECK(parse_json(R"("\u0041\u00e9\u20AC")").as_string() == "A\xC3\xA9\xE2\x82\xAC");
  CHECK(parse_json(R"("\ud83d\ude00")").as_string() == "\xF0\x9F\x98\x80");  // U+1F600, a surrogate pair
  CHECK(parse_json(R"("\u0000")").as_string() == std::string(1, '\0'));
  CHECK(parse_json("\"caf\xC3\xA9 \xF0\x9F\x98\x80\"").as_string() == "caf\xC3\xA9 \xF0\x9F\x98\x80");

  // Every ASCII byte, control characters included, survives a round trip.
  std::string all;
  for (int c = 0; c < 128; ++c) all += static_cast<char>(c);
  const std::string written = to_json(Json(all));
  for (char c : written) CHECK(static_cast<unsigned char>(c) >= 0x20);
  CHECK(parse_json(written).as_string() == all);
  CHECK(to_json(Json("a\"b\\c\nd\x01")) == R"("a\"b\\c\nd\u0001")");
  CHECK_THROWS_WITH(to_json(Json("bad \xFF")), Contains("invalid UTF-8"));
}

TEST_CASE("json: numbers") {
  CHECK(parse_json("0").as_number() == 0.0);
  CHECK(std::signbit(parse_json("-0").as_number()));
  CHECK(parse_json("-0.0").as_number() == 0.0);
  CHECK(parse_json("1.5").as_number() == 1.5);
  CHECK(parse_json("1e3").as_number() == 1000.0);
  CHECK(parse_json("1E-2").as_number() == 0.01);
  CHECK(parse_json("-12.5e+2").as_number() == -1250.0);
  CHECK(parse_json("0.1").as_number() == 0.1);
  CHECK(parse_json("9007199254740993").as_number() == 9007199254740992.0);  // nearest double
  CHECK(parse_json("1e-400").as_number() == 0.0);                           // underflow reads as zero
  CHECK(parse_json("-0.00000e-9999999999999999999").as_number() == 0.0);
  CHECK(parse_json("1.7976931348623157e308").as_number() == std::numeric_limits<double>::max());
  CHECK(parse_json("4.9406564584124654e-324").as_number() == std::numeric_limits<double>::denorm_min());

  CHECK(to_json(Json(10)) == "10");
  CHECK(to_json(Json(-3.0)) == "-3");
  CHECK(to_json(Json(int64_t{1} << 52)) == "4503599627370496");
  CHECK(to_json(Json(0.5)) == "0.5");
  CHECK(to_json(Json(0.1)) == "0.1");
  CHECK(to_json(Json(1e300)) == "1e+300");
  CHECK(to_json(Json(-0.0)) == "-0");
  CHECK(to_json(Json(0.0003)) == "0.0003");
  CHECK(to_json(Json(1.25e-5)) == "1.25e-05");
  CHECK(to_json(Json(123456.789)) == "123456.789");
  CHECK(to_json(Json(1e16 + 2)) == "1.0000000000000002e+16");
  CHECK_THROWS_WITH(to_json(Json::object({{"loss", std::nan("")}})), Contains("cannot write nan (at \"loss\")"));
  CHECK_THROWS_WITH(to_json(Json(HUGE_VAL)), Contains("JSON has no NaN or infinity"));

  // Written numbers read back to the same double.
  std::mt19937_64 random(7);
  for (int i = 0; i < 2000; ++i) {
    uint64_t bits = random();
    double value;
    std::memcpy(&value, &bits, sizeof value);
    if (!std::isfinite(value)) continue;
    INFO(value);
    REQUIRE(parse_json(to_json(Json(value))).as_number() == value);
  }
}

TEST_CASE("json: typed accessors name the key") {
  Json doc = parse_json(R"({"config": {"d_model": "64", "n_layers": 2.5, "big": 1e19, "min": -9223372036854775808},
                            "shape": [1, "x"]})");
  CHECK(doc.at("config").at("min").as_int() == std::numeric_limits<int64_t>::min());
  CHECK_THROWS_WITH(doc.at("config").at("d_model").as_int(), "json: \"config.d_model\" is a string, expected an integer");
  CHECK_THROWS_WITH(doc.at("config").at("n_layers").as_int(), "json: \"config.n_layers\" is 2.5, expected an integer");
  CHECK_THROWS_WITH(doc.at("config").at("big").as_int(), Contains("\"config.big\" is 1e+19, out of the range"));
  CHECK_THROWS_WITH(doc.at("config").at("classes"), "json: \"config\" has no key \"classes\"");
  CHECK_THROWS_WITH(doc.at("nothing"), "json: the top-level object has no key \"nothing\"");
  CHECK_THROWS_WITH(doc.at("shape").at(1).as_number(), "json: \"shape[1]\" is a string, expected a number");
  CHECK_THROWS_WITH(doc.at("shape").at(2), Contains("index 2 out of range for \"shape\" of 2 elements"));
  CHECK_THROWS_WITH(doc.at("shape").as_object(), "json: \"shape\" is an array, expected an object");
  CHECK_THROWS_WITH(doc.as_string(), "json: the top-level value is an object, expected a string");
  CHECK_THROWS_WITH(doc.at("config").as_bool(), "json: \"config\" is an object, expected a boolean");
  CHECK_THROWS_WITH(doc.at("config").at("d_model").as_array(), Contains("is a string, expected an array"));
}

TEST_CASE("json: building objects and metrics lines") {
  Json object = Json::object({{"step", 10}, {"loss", 0.5}});
  object.set("lr", 3e-4);
  object.set("step", 11);  // replaces in place
  CHECK(to_json(object) == R"({"step":11,"loss":0.5,"lr":0.0003})");
  CHECK_THROWS_WITH(object.at("lr").as_string(), "json: \"lr\" is a number, expected a string");
  Json list = Json::array({1, "two"});
  list.push_back(nullptr);
  CHECK(to_json(list) == R"([1,"two",null])");
  CHECK_THROWS_WITH(Json(Json::Object{{"a", 1}, {"a", 2}}), Contains("duplicate key \"a\""));
  CHECK_THROWS_WITH(list.set("x", 1), Contains("is an array, expected an object"));

  std::ostringstream log;
  write_json_line(log, Json::object({{"step", 10}, {"loss", 0.5}}));
  write_json_line(log, Json::object({{"step", 20}, {"tag", "eval"}}));
  CHECK(log.str() == "{\"step\":10,\"loss\":0.5}\n{\"step\":20,\"tag\":\"eval\"}\n");
  CHECK_THROWS_WITH(write_json_line(log, Json(1)), Contains("expected an object"));
}

TEST_CASE("json: every syntax error names its byte offset") {
  struct Case {
    std::string text;
    size_t offset;
    const char* reason;
  };
  const std::vector<Case> cases = {
      {"", 0, "expected a value, got the end of the text"},
      {"   ", 3, "expected a value"},
      {"{", 1, "expected a string key, got the end of the text"},
      {"{\"a\"", 4, "expected ':' after an object key"},
      {"{\"a\" 1}", 5, "expected ':' after an object key, got '1'"},
      {"{\"a\":1", 6, "expected '}' or ',' after an object member"},
      {"{\"a\":1,}", 7, "expected a string key, got '}'"},
      {"{a:1}", 1, "expected a string key, got 'a'"},
      {"{\"a\":1,\"a\":2}", 7, "duplicate key \"a\""},
      {"[1,]", 3, "expected a value"},
      {"[1 2]", 3, "expected ']' or ',' after an array element, got '2'"},
      {"[1,2", 4, "expected ']' or ','"},
      {"01", 0, "leading zeros are not allowed"},
      {"-01", 0, "leading zeros are not allowed"},
      {"-", 1, "expected a digit after '-', got the end of the text"},
      {"-x", 1, "expected a digit after '-', got 'x'"},
      {"1.", 2, "expected a digit after '.'"},
      {"1.e5", 2, "expected a digit after '.', got 'e'"},
      {"1e", 2, "expected a digit in the exponent"},
      {"1e+", 3, "expected a digit in the exponent"},
      {"+1", 0, "expected a value"},
      {".5", 0, "expected a value"},
      {"1e400", 0, "is out of the range of a double"},
      {"-1e400", 0, "is out of the range of a double"},
      {"NaN", 0, "expected a value"},
      {"nan", 0, "expected 'null'"},
      {"Infinity", 0, "expected a value"},
      {"-Infinity", 1, "expected a digit after '-'"},
      {"nul", 0, "expected 'null'"},
      {"tru", 0, "expected 'true'"},
      {"falsy", 0, "expected 'false'"},
      {"true false", 5, "expected the end of the document, got 'f'"},
      {"{} x", 3, "expected the end of the document, got 'x'"},
      {"1 2", 2, "expected the end of the document"},
      {std::string("1\0", 2), 1, "expected the end of the document, got byte 0x00"},
      {"\"abc", 4, "unterminated string starting at byte 0"},
      {"\"abc\\", 5, "unterminated string starting at byte 0"},
      {"\"a\\x\"", 2, "invalid escape \\'x' in a string"},
      {"\"\\u12G4\"", 5, "expected a hex digit in a \\u escape, got 'G'"},
      {"\"\\u12\" ", 5, "expected a hex digit in a \\u escape, got '\"'"},
      {"\"\\u", 3, "expected 4 hex digits after \\u"},
      {"\"\\ud800\"", 1, "high surrogate not followed by a \\u low surrogate"},
      {"\"\\ud800\\u0041\"", 1, "high surrogate not followed by a low surrogate"},
      {"\"\\udc00\"", 1, "unpaired low surrogate"},
      {"\"a\nb\"", 2, "control character byte 0x0A in a string must be escaped"},
      {"\"a\tb\"", 2, "control character byte 0x09"},
      {"\"\xFF\"", 1, "invalid UTF-8"},
      {"\"\xC3\"", 1, "invalid UTF-8"},                // truncated sequence
      {"\"\xC0\xAF\"", 1, "invalid UTF-8"},            // overlong '/'
      {"\"\xED\xA0\x80\"", 1, "invalid UTF-8"},        // an encoded surrogate
      {"\"\xF4\x90\x80\x80\"", 1, "invalid UTF-8"},    // above U+10FFFF
      {"[\"ok\", \"\x80\"]", 8, "invalid UTF-8"},
      {"\xEF\xBB\xBF{}", 0, "got byte 0xEF"},  // a byte-order mark is not JSON
  };
  for (const Case& c : cases) {
    INFO("text: " << c.text);
    try {
      parse_json(c.text);
      FAIL("parsed without an error");
    } catch (const JsonParseError& error) {
      CHECK(error.offset == c.offset);
      CHECK_THAT(error.reason, Contains(c.reason));
      CHECK_THAT(error.what(), Contains("json: byte " + std::to_string(c.offset) + ": "));
    }
  }
}

TEST_CASE("json: nesting deeper than the limit is rejected, without recursing further") {
  auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  CHECK(parse_json(nested(kJsonMaxDepth)).is_array());
  CHECK_THROWS_WITH(parse_json(nested(kJsonMaxDepth + 1)),
                    "json: byte 64: arrays and objects nested deeper than 64 levels");
  CHECK_THROWS_WITH(parse_json(std::string(1'000'000, '[')), Contains("nested deeper than 64 levels"));
  std::string objects;
  for (int i = 0; i < 100; ++i) objects += "{\"a\":";
  CHECK_THROWS_WITH(parse_json(objects), Contains("nested deeper than 64 levels"));
}

TEST_CASE("json: no prefix of a valid document parses, and no byte flip crashes") {
  const std::string text = R"({"a": [1, -2.5e3, "x\u00e9\n", true, null], "b": {"c": false}})";
  REQUIRE_NOTHROW(parse_json(text));
  for (size_t length = 0; length < text.size(); ++length) {
    INFO("prefix of " << length << " bytes");
    CHECK_THROWS_AS(parse_json(std::string_view(text).substr(0, length)), JsonParseError);
  }
  for (size_t i = 0; i < text.size(); ++i)
    for (int value : std::initializer_list<int>{0, '"', '\\', '[', '{', '}', ']', ',', ':', '0', 'e', '-', 0x80, 0xFF}) {
      std::string mutated = text;
      mutated[i] = static_cast<char>(value);
      try {
        parse_json(mutated);
      } catch (const JsonParseError&) {
      }
    }
}
