#pragma once
// A small JSON value (RFC 8259) for safetensors headers, configs and metrics
// lines. Objects keep insertion order and reject duplicate keys. The parser is
// for untrusted input: it never reads past the text, limits nesting depth, and
// every error names the byte offset and what was expected there.
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/error.h"

namespace hkt {

// A parse error: offset is the byte of the text where parsing stopped, reason
// says what was expected there. what() is "json: byte <offset>: <reason>".
struct JsonParseError : Error {
  JsonParseError(size_t offset, const std::string& reason);
  size_t offset;
  std::string reason;
};

class Json {
 public:
  enum class Type { Null, Bool, Number, String, Array, Object };
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;  // insertion order

  Json() = default;  // null
  Json(std::nullptr_t) {}
  Json(bool value) : type_(Type::Bool), bool_(value) {}
  template <class T>
    requires((std::integral<T> && !std::same_as<T, bool>) || std::floating_point<T>)
  Json(T value) : type_(Type::Number), number_(static_cast<double>(value)) {}
  Json(const char* value) : type_(Type::String), string_(value) {}
  Json(std::string_view value) : type_(Type::String), string_(value) {}
  Json(std::string value) : type_(Type::String), string_(std::move(value)) {}
  Json(Array items);
  Json(Object members);  // throws on a duplicate key

  static Json array(std::initializer_list<Json> items = {});
  static Json object(std::initializer_list<std::pair<std::string, Json>> members = {});

  Type type() const { return type_; }
  const char* type_name() const;  // "null", "a number", ...
  bool is_null() const { return type_ == Type::Null; }
  bool is_bool() const { return type_ == Type::Bool; }
  bool is_number() const { return type_ == Type::Number; }
  bool is_string() const { return type_ == Type::String; }
  bool is_array() const { return type_ == Type::Array; }
  bool is_object() const { return type_ == Type::Object; }

  // Typed access; a wrong type throws naming the value's path
  // ("json: \"shape[1]\" is a string, expected a number").
  bool as_bool() const;
  double as_number() const;
  int64_t as_int() const;  // an integral number in int64 range
  const std::string& as_string() const;
  const Array& as_array() const;
  const Object& as_object() const;

  // Objects: lookup by key (linear; objects here are small) and insertion.
  bool contains(std::string_view key) const;
  const Json& at(std::string_view key) const;  // throws naming the missing key
  const Json& at(size_t index) const;          // arrays; throws when out of range
  void set(const std::string& key, Json value);  // replaces an existing key, else appends
  void push_back(Json value);                   // arrays
  size_t size() const;                          // elements or members; 0 for scalars

  // Where this value sits in the parsed document ("config.n_layers",
  // "weight.shape[1]"; empty for the root), used in accessor errors.
  const std::string& path() const { return path_; }

  bool operator==(const Json& other) const;  // by value; paths are ignored

 private:
  friend class JsonParser;
  [[noreturn]] void type_error(const char* expected) const;
  std::string where() const;

  Type type_ = Type::Null;
  bool bool_ = false;
  double number_ = 0.0;
  std::string string_;
  Array array_;
  Object object_;
  std::string path_;
};

// Parses one JSON document; whitespace may surround it, nothing else may follow.
constexpr int kJsonMaxDepth = 64;
Json parse_json(std::string_view text);

// Compact JSON (no spaces), as serde_json and Python's separators=(",", ":")
// write it. Integral numbers below 2^53 print as integers, others as the
// shortest text that reads back to the same double. NaN and infinities have no
// JSON form and throw.
std::string to_json(const Json& value);

// One metrics line: to_json(fields) and a newline, flushed, e.g.
// write_json_line(log, Json::object({{"step", 10}, {"loss", 0.5}})).
void write_json_line(std::ostream& out, const Json& fields);

namespace json_detail {  // shared by json.cpp and json_parse.cpp
// "parent.key" and "parent[index]", cut to their last 160 bytes.
std::string member_path(const std::string& parent, std::string_view key);
std::string element_path(const std::string& parent, size_t index);
// The length of the well-formed UTF-8 sequence at text[pos] (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), or 0 if there is none.
size_t utf8_sequence_length(std::string_view text, size_t pos);
}  // namespace json_detail

}  // namespace hkt
