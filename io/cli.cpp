#include "io/cli.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "engine/error.h"

namespace hkt::cli {

Flags::Flags(std::string program, std::string summary) : program_(std::move(program)), summary_(std::move(summary)) {}

void Flags::add(const std::string& name, const std::string& default_value, const std::string& help) {
  check(flags_.count(name) == 0, program_, ": flag --", name, " declared twice");
  order_.push_back(name);
  flags_[name] = Flag{default_value, help, false, false};
}

void Flags::add_switch(const std::string& name, const std::string& help) {
  add(name, "false", help);
  flags_[name].is_switch = true;
}

bool Flags::parse(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage().c_str(), stdout);
      return false;
    }
    check(arg.size() > 2 && arg.compare(0, 2, "--") == 0, program_, ": unexpected argument '", arg,
          "' (flags look like --name value; see --help)");
    std::string name = arg.substr(2), value;
    bool inline_value = false;
    if (auto equals = name.find('='); equals != std::string::npos) {
      value = name.substr(equals + 1);
      name = name.substr(0, equals);
      inline_value = true;
    }
    auto it = flags_.find(name);
    check(it != flags_.end(), program_, ": unknown flag --", name, " (see --help)");
    Flag& flag = it->second;
    check(!flag.given, program_, ": flag --", name, " given twice");
    if (flag.is_switch) {
      check(!inline_value || value == "true" || value == "false", program_, ": switch --", name,
            " takes no value (or =true/=false), got '", value, "'");
      flag.value = inline_value ? value : "true";
    } else {
      if (!inline_value) {
        check(i + 1 < argc, program_, ": flag --", name, " needs a value");
        value = argv[++i];
      }
      flag.value = value;
    }
    flag.given = true;
  }
  return true;
}

const Flags::Flag& Flags::find(const std::string& name) const {
  auto it = flags_.find(name);
  check(it != flags_.end(), program_, ": internal error: flag --", name, " was never declared");
  return it->second;
}

std::string Flags::get(const std::string& name) const { return find(name).value; }
bool Flags::was_given(const std::string& name) const { return find(name).given; }
bool Flags::get_bool(const std::string& name) const { return find(name).value == "true"; }

int64_t Flags::get_int(const std::string& name) const {
  const std::string& text = find(name).value;
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  check(!text.empty() && end != nullptr && *end == '\0' && errno == 0, program_, ": --", name,
        " needs a whole number, got '", text, "'");
  return static_cast<int64_t>(value);
}

double Flags::get_double(const std::string& name) const {
  const std::string& text = find(name).value;
  errno = 0;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  check(!text.empty() && end != nullptr && *end == '\0' && errno == 0 && std::isfinite(value), program_, ": --",
        name, " needs a finite number, got '", text, "'");
  return value;
}

std::string Flags::usage() const {
  std::ostringstream out;
  out << "usage: " << program_ << " [flags]\n" << summary_ << "\n\nflags:\n";
  for (const std::string& name : order_) {
    const Flag& flag = flags_.at(name);
    std::string head = "  --";
    head += name;
    if (!flag.is_switch) head += " VALUE";
    out << head << std::string(head.size() < 26 ? 26 - head.size() : 1, ' ') << flag.help;
    if (!flag.is_switch && !flag.value.empty()) out << " (default " << flag.value << ")";
    out << "\n";
  }
  return out.str();
}

}  // namespace hkt::cli
