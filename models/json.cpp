#include "models/json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <unordered_set>

namespace hkt {
namespace {

constexpr size_t kMaxPathLength = 160;  // longer paths keep their tail

std::string member_path(const std::string& parent, std::string_view key) {
  std::string path = parent.empty() ? std::string(key) : parent + "." + std::string(key);
  if (path.size() > kMaxPathLength) path = "..." + path.substr(path.size() - (kMaxPathLength - 3));
  return path;
}

std::string element_path(const std::string& parent, size_t index) {
  std::string path = parent + "[" + std::to_string(index) + "]";
  if (path.size() > kMaxPathLength) path = "..." + path.substr(path.size() - (kMaxPathLength - 3));
  return path;
}

// The length of the well-formed UTF-8 sequence at text[pos] (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), or 0 if there is none.
size_t utf8_sequence_length(std::string_view text, size_t pos) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (text.size() - pos < length) return 0;
  if (byte(pos + 1) < low || byte(pos + 1) > high) return 0;
  for (size_t i = 2; i < length; ++i)
    if (byte(pos + i) < 0x80 || byte(pos + i) > 0xBF) return 0;
  return length;
}

void append_utf8(std::string& out, uint32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

JsonParseError::JsonParseError(size_t offset_, const std::string& reason_)
    : Error("json: byte " + std::to_string(offset_) + ": " + reason_), offset(offset_), reason(reason_) {}

// Recursive descent over the RFC 8259 grammar; pos_ never passes text_.size().
class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : text_(text) {}

  Json parse_document() {
    skip_whitespace();
    Json value = parse_value(0, "");
    skip_whitespace();
    if (pos_ != text_.size()) error(pos_, "expected the end of the document, got " + describe(pos_));
    return value;
  }

 private:
  [[noreturn]] void error(size_t offset, const std::string& reason) const { throw JsonParseError(offset, reason); }

  std::string describe(size_t pos) const {
    if (pos >= text_.size()) return "the end of the text";
    unsigned char c = static_cast<unsigned char>(text_[pos]);
    if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", c);
    return std::string("byte ") + hex;
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }

  void skip_whitespace() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++pos_;
  }

  void expect(char c, const char* context) {
    if (at_end() || peek() != c) error(pos_, std::string("expected '") + c + "' " + context + ", got " + describe(pos_));
    ++pos_;
  }

  Json parse_value(int depth, const std::string& path) {
    if (at_end()) error(pos_, "expected a value, got the end of the text");
    Json value;
    switch (peek()) {
      case '{': value = parse_object(depth + 1, path); break;
      case '[': value = parse_array(depth + 1, path); break;
      case '"': value = Json(parse_string()); break;
      case 't': parse_literal("true"); value = Json(true); break;
      case 'f': parse_literal("false"); value = Json(false); break;
      case 'n': parse_literal("null"); break;
      default:
        if (peek() == '-' || is_digit(peek())) {
          value = Json(parse_number());
          break;
        }
        error(pos_, "expected a value (object, array, string, number, true, false or null), got " + describe(pos_));
    }
    value.path_ = path;
    return value;
  }

  void parse_literal(std::string_view literal) {
    if (text_.substr(pos_, literal.size()) != literal) error(pos_, "expected '" + std::string(literal) + "'");
    pos_ += literal.size();
  }

  void check_depth(int depth) const {
    if (depth > kJsonMaxDepth)
      error(pos_, "arrays and objects nested deeper than " + std::to_string(kJsonMaxDepth) + " levels");
  }

  Json parse_object(int depth, const std::string& path) {
    check_depth(depth);
    ++pos_;  // '{'
    Json object;
    object.type_ = Json::Type::Object;
    std::unordered_set<std::string> keys;
    skip_whitespace();
    if (!at_end() && peek() == '}') {
      ++pos_;
      return object;
    }
    while (true) {
      if (at_end() || peek() != '"') error(pos_, "expected a string key, got " + describe(pos_));
      const size_t key_offset = pos_;
      std::string key = parse_string();
      if (!keys.insert(key).second) error(key_offset, "duplicate key \"" + key + "\"");
      skip_whitespace();
      expect(':', "after an object key");
      skip_whitespace();
      Json value = parse_value(depth, member_path(path, key));
      object.object_.emplace_back(std::move(key), std::move(value));
      skip_whitespace();
      if (!at_end() && peek() == ',') {
        ++pos_;
        skip_whitespace();
        continue;
      }
      expect('}', "or ',' after an object member");
      return object;
    }
  }

  Json parse_array(int depth, const std::string& path) {
    check_depth(depth);
    ++pos_;  // '['
    Json array;
    array.type_ = Json::Type::Array;
    skip_whitespace();
    if (!at_end() && peek() == ']') {
      ++pos_;
      return array;
    }
    while (true) {
      array.array_.push_back(parse_value(depth, element_path(path, array.array_.size())));
      skip_whitespace();
      if (!at_end() && peek() == ',') {
        ++pos_;
        skip_whitespace();
        continue;
      }
      expect(']', "or ',' after an array element");
      return array;
    }
  }

  uint32_t parse_hex4() {
    if (text_.size() - pos_ < 4) error(pos_, "expected 4 hex digits after \\u, got the end of the text");
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = peek();
      uint32_t digit;
      if (c >= '0' && c <= '9') digit = static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') digit = static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') digit = static_cast<uint32_t>(c - 'A' + 10);
      else error(pos_, "expected a hex digit in a \\u escape, got " + describe(pos_));
      value = value * 16 + digit;
      ++pos_;
    }
    return value;
  }

  // \uXXXX, with a UTF-16 surrogate pair joined into one code point.
  void parse_unicode_escape(std::string& out, size_t escape_offset) {
    uint32_t code_point = parse_hex4();
    if (code_point >= 0xDC00 && code_point <= 0xDFFF) error(escape_offset, "unpaired low surrogate in a \\u escape");
    if (code_point >= 0xD800 && code_point <= 0xDBFF) {
      if (text_.substr(pos_, 2) != "\\u") error(escape_offset, "high surrogate not followed by a \\u low surrogate");
      pos_ += 2;
      uint32_t low = parse_hex4();
      if (low < 0xDC00 || low > 0xDFFF) error(escape_offset, "high surrogate not followed by a low surrogate");
      code_point = 0x10000 + ((code_point - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(out, code_point);
  }

  std::string parse_string() {
    const size_t start = pos_;
    ++pos_;  // '"'
    std::string out;
    while (true) {
      if (at_end()) error(pos_, "unterminated string starting at byte " + std::to_string(start));
      const unsigned char c = static_cast<unsigned char>(peek());
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) error(pos_, "control character " + describe(pos_) + " in a string must be escaped");
      if (c >= 0x80) {
        size_t length = utf8_sequence_length(text_, pos_);
        if (length == 0) error(pos_, "invalid UTF-8 in a string");
        out.append(text_.substr(pos_, length));
        pos_ += length;
        continue;
      }
      if (c != '\\') {
        out += static_cast<char>(c);
        ++pos_;
        continue;
      }
      const size_t escape_offset = pos_;
      ++pos_;
      if (at_end()) error(pos_, "unterminated string starting at byte " + std::to_string(start));
      const char escape = peek();
      ++pos_;
      switch (escape) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': parse_unicode_escape(out, escape_offset); break;
        default: error(escape_offset, "invalid escape \\" + describe(pos_ - 1) + " in a string");
      }
    }
  }

  void skip_digits() {
    while (!at_end() && is_digit(peek())) ++pos_;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  double parse_number() {
    const size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (at_end() || !is_digit(peek())) error(pos_, "expected a digit after '-', got " + describe(pos_));
    if (peek() == '0') {
      ++pos_;
      if (!at_end() && is_digit(peek())) error(start, "leading zeros are not allowed in a number");
    } else {
      skip_digits();
    }
    if (!at_end() && peek() == '.') {
      ++pos_;
      if (at_end() || !is_digit(peek())) error(pos_, "expected a digit after '.', got " + describe(pos_));
      skip_digits();
    }
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      ++pos_;
      if (!at_end() && (peek() == '+' || peek() == '-')) ++pos_;
      if (at_end() || !is_digit(peek())) error(pos_, "expected a digit in the exponent, got " + describe(pos_));
      skip_digits();
    }
    const std::string_view token = text_.substr(start, pos_ - start);
    double value = 0.0;
    auto [end, status] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (status == std::errc::result_out_of_range) {
      if (overflows(token)) error(start, "number " + std::string(token.substr(0, 40)) + " is out of the range of a double");
      return token[0] == '-' ? -0.0 : 0.0;  // underflow, as strtod and Python read it
    }
    if (status != std::errc() || end != token.data() + token.size()) error(start, "malformed number");
    return value;
  }

  // For an out-of-range token: true if it is too large rather than too small,
  // from the decimal exponent of its first significant digit.
  static bool overflows(std::string_view token) {
    size_t i = token[0] == '-' ? 1 : 0;
    int64_t integer_digits = 0, index = 0, first_significant = -1;
    bool after_point = false;
    for (; i < token.size() && token[i] != 'e' && token[i] != 'E'; ++i) {
      if (token[i] == '.') {
        after_point = true;
        continue;
      }
      if (!after_point) ++integer_digits;
      if (first_significant < 0 && token[i] != '0') first_significant = index;
      ++index;
    }
    if (first_significant < 0) return false;
    int64_t exponent = 0;
    if (i < token.size()) {
      ++i;  // 'e'
      const bool negative = token[i] == '-';
      if (token[i] == '+' || token[i] == '-') ++i;
      for (; i < token.size(); ++i) exponent = std::min<int64_t>(exponent * 10 + (token[i] - '0'), 1'000'000'000);
      if (negative) exponent = -exponent;
    }
    return integer_digits - 1 - first_significant + exponent > 0;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

Json parse_json(std::string_view text) { return JsonParser(text).parse_document(); }

Json::Json(Array items) : type_(Type::Array), array_(std::move(items)) {
  for (size_t i = 0; i < array_.size(); ++i) array_[i].path_ = element_path("", i);
}

Json::Json(Object members) : type_(Type::Object), object_(std::move(members)) {
  std::unordered_set<std::string_view> keys;
  for (auto& [key, value] : object_) {
    check(keys.insert(key).second, "json: duplicate key \"", key, "\" in an object");
    value.path_ = key;
  }
}

Json Json::array(std::initializer_list<Json> items) { return Json(Array(items)); }
Json Json::object(std::initializer_list<std::pair<std::string, Json>> members) { return Json(Object(members)); }

const char* Json::type_name() const {
  switch (type_) {
    case Type::Null: return "null";
    case Type::Bool: return "a boolean";
    case Type::Number: return "a number";
    case Type::String: return "a string";
    case Type::Array: return "an array";
    case Type::Object: return "an object";
  }
  return "?";
}

std::string Json::where() const { return path_.empty() ? "the top-level value" : "\"" + path_ + "\""; }

void Json::type_error(const char* expected) const { fail("json: ", where(), " is ", type_name(), ", expected ", expected); }

bool Json::as_bool() const {
  if (type_ != Type::Bool) type_error("a boolean");
  return bool_;
}

double Json::as_number() const {
  if (type_ != Type::Number) type_error("a number");
  return number_;
}

int64_t Json::as_int() const {
  if (type_ != Type::Number) type_error("an integer");
  check(std::trunc(number_) == number_, "json: ", where(), " is ", number_, ", expected an integer");
  // [-2^63, 2^63): both bounds are exact doubles.
  check(number_ >= -9223372036854775808.0 && number_ < 9223372036854775808.0, "json: ", where(), " is ", number_,
        ", out of the range of a 64-bit integer");
  return static_cast<int64_t>(number_);
}

const std::string& Json::as_string() const {
  if (type_ != Type::String) type_error("a string");
  return string_;
}

const Json::Array& Json::as_array() const {
  if (type_ != Type::Array) type_error("an array");
  return array_;
}

const Json::Object& Json::as_object() const {
  if (type_ != Type::Object) type_error("an object");
  return object_;
}

bool Json::contains(std::string_view key) const {
  for (const auto& member : as_object())
    if (member.first == key) return true;
  return false;
}

const Json& Json::at(std::string_view key) const {
  for (const auto& member : as_object())
    if (member.first == key) return member.second;
  fail("json: ", path_.empty() ? "the top-level object" : "\"" + path_ + "\"", " has no key \"", key, "\"");
}

const Json& Json::at(size_t index) const {
  const Array& items = as_array();
  check(index < items.size(), "json: index ", index, " out of range for ", where(), " of ", items.size(), " elements");
  return items[index];
}

void Json::set(const std::string& key, Json value) {
  as_object();
  value.path_ = member_path(path_, key);
  for (auto& member : object_)
    if (member.first == key) {
      member.second = std::move(value);
      return;
    }
  object_.emplace_back(key, std::move(value));
}

void Json::push_back(Json value) {
  as_array();
  value.path_ = element_path(path_, array_.size());
  array_.push_back(std::move(value));
}

size_t Json::size() const {
  if (type_ == Type::Array) return array_.size();
  if (type_ == Type::Object) return object_.size();
  return 0;
}

bool Json::operator==(const Json& other) const {
  if (type_ != other.type_) return false;
  switch (type_) {
    case Type::Null: return true;
    case Type::Bool: return bool_ == other.bool_;
    case Type::Number: return number_ == other.number_;
    case Type::String: return string_ == other.string_;
    case Type::Array: return array_ == other.array_;
    case Type::Object:
      if (object_.size() != other.object_.size()) return false;
      for (const auto& [key, value] : object_)
        if (!other.contains(key) || !(other.at(key) == value)) return false;
      return true;
  }
  return false;
}

namespace {

void write_string(std::string& out, std::string_view text) {
  static const char* const kHex = "0123456789abcdef";
  out += '"';
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const size_t length = utf8_sequence_length(text, i);
      check(length > 0, "json: cannot write a string with invalid UTF-8 at byte ", i);
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
}

void write_number(std::string& out, double value, const std::string& path) {
  check(std::isfinite(value), "json: cannot write ", value, " (at \"", path, "\"): JSON has no NaN or infinity");
  char buffer[32];
  std::to_chars_result result;
  if (value == 0 && std::signbit(value)) {
    out += "-0";
    return;
  }
  if (std::trunc(value) == value && std::fabs(value) < 9007199254740992.0)
    result = std::to_chars(buffer, buffer + sizeof buffer, static_cast<int64_t>(value));
  else  // the shortest digits that read back exactly, fixed or scientific where Python's repr picks them
    result = std::to_chars(buffer, buffer + sizeof buffer, value,
                           std::fabs(value) >= 1e-4 && std::fabs(value) < 1e16 ? std::chars_format::fixed
                                                                               : std::chars_format::scientific);
  out.append(buffer, result.ptr);
}

void write_value(std::string& out, const Json& value) {
  switch (value.type()) {
    case Json::Type::Null: out += "null"; break;
    case Json::Type::Bool: out += value.as_bool() ? "true" : "false"; break;
    case Json::Type::Number: write_number(out, value.as_number(), value.path()); break;
    case Json::Type::String: write_string(out, value.as_string()); break;
    case Json::Type::Array: {
      out += '[';
      bool first = true;
      for (const Json& item : value.as_array()) {
        if (!first) out += ',';
        first = false;
        write_value(out, item);
      }
      out += ']';
      break;
    }
    case Json::Type::Object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.as_object()) {
        if (!first) out += ',';
        first = false;
        write_string(out, key);
        out += ':';
        write_value(out, item);
      }
      out += '}';
      break;
    }
  }
}

}  // namespace

std::string to_json(const Json& value) {
  std::string out;
  write_value(out, value);
  return out;
}

void write_json_line(std::ostream& out, const Json& fields) {
  check(fields.is_object(), "write_json_line: expected an object of fields, got ", fields.type_name());
  out << to_json(fields) << '\n' << std::flush;
}

}  // namespace hkt
