// The JSON parser: recursive descent over the RFC 8259 grammar, for untrusted
// text (bounded depth, offsets in every error, strict UTF-8).
#include "io/json.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <unordered_set>

namespace hkt {
namespace {

using json_detail::element_path;
using json_detail::member_path;
using json_detail::utf8_sequence_length;

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

}  // namespace hkt
