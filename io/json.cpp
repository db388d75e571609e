#include "io/json.h"

#include <charconv>
#include <cmath>
#include <ostream>
#include <unordered_set>

namespace hkt {
namespace json_detail {

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

}  // namespace json_detail

using json_detail::element_path;
using json_detail::member_path;
using json_detail::utf8_sequence_length;

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
