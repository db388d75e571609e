#include "io/cli.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "engine/version.h"

namespace hkt::cli {
namespace {

// "%g" without the noise: 1e-08, 0.001, 300.
std::string number_text(double value) {
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

bool parse_int(const std::string& text, int64_t& value) {
  errno = 0;
  char* end = nullptr;
  const long long parsed = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end == nullptr || *end != '\0' || errno != 0) return false;
  value = static_cast<int64_t>(parsed);
  return true;
}

bool parse_real(const std::string& text, double& value) {
  errno = 0;
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return !text.empty() && end != nullptr && *end == '\0' && errno == 0 && std::isfinite(value);
}

}  // namespace

Flags::Flags(std::string program, std::string summary) : program_(std::move(program)), summary_(std::move(summary)) {}

Flags::Flag& Flags::declare(const std::string& name, Kind kind, std::string default_value, const std::string& help) {
  check(flags_.count(name) == 0 && name != "help" && name != "version", "flag --", name, " declared twice");
  order_.push_back(name);
  Flag& flag = flags_[name];
  flag.kind = kind;
  flag.value = std::move(default_value);
  flag.help = help;
  return flag;
}

void Flags::add(const std::string& name, const std::string& default_value, const std::string& help) {
  declare(name, Kind::Text, default_value, help);
}

void Flags::add_choice(const std::string& name, const std::string& default_value, std::vector<std::string> choices,
                       const std::string& help) {
  declare(name, Kind::Choice, default_value, help).choices = std::move(choices);
}

void Flags::add_int(const std::string& name, int64_t default_value, const std::string& help, int64_t min,
                    int64_t max) {
  Flag& flag = declare(name, Kind::Int, std::to_string(default_value), help);
  flag.int_min = min;
  flag.int_max = max;
}

void Flags::add_real(const std::string& name, double default_value, const std::string& help, double min, double max,
                     bool min_exclusive) {
  Flag& flag = declare(name, Kind::Real, number_text(default_value), help);
  flag.real_min = min;
  flag.real_max = max;
  flag.min_exclusive = min_exclusive;
}

void Flags::add_switch(const std::string& name, const std::string& help) {
  declare(name, Kind::Switch, "false", help);
}

void Flags::require(const std::string& name) {
  auto it = flags_.find(name);
  check(it != flags_.end(), "flag --", name, " was never declared");
  it->second.required = true;
}

// The value of a given flag against its kind and range; the message says
// what the flag takes.
void Flags::validate(const std::string& name, const Flag& flag) const {
  const std::string& text = flag.value;
  switch (flag.kind) {
    case Kind::Text:
    case Kind::Switch: return;
    case Kind::Choice: {
      std::string list;
      for (const std::string& choice : flag.choices) {
        if (choice == text) return;
        list += (list.empty() ? "" : " | ") + choice;
      }
      throw UsageError("--" + name + " must be one of " + list + ", got '" + text + "'");
    }
    case Kind::Int: {
      int64_t value = 0;
      const bool ok = parse_int(text, value) && value >= flag.int_min && value <= flag.int_max;
      if (ok) return;
      const std::string range = flag.int_max == kIntMax ? ">= " + std::to_string(flag.int_min)
                                                        : "in " + std::to_string(flag.int_min) + ".." +
                                                              std::to_string(flag.int_max);
      throw UsageError("--" + name + " must be a whole number " + range + ", got '" + text + "'");
    }
    case Kind::Real: {
      double value = 0;
      if (parse_real(text, value) && (flag.min_exclusive ? value > flag.real_min : value >= flag.real_min) &&
          value <= flag.real_max)
        return;
      std::string range = (flag.min_exclusive ? "> " : ">= ") + number_text(flag.real_min);
      if (std::isfinite(flag.real_max)) range += " and <= " + number_text(flag.real_max);
      throw UsageError("--" + name + " must be a finite number " + range + ", got '" + text + "'");
    }
  }
}

bool Flags::parse(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage().c_str(), stdout);
      return false;
    }
    if (arg == "--version") {
      print_version(program_);
      return false;
    }
    usage_check(arg.size() > 2 && arg.compare(0, 2, "--") == 0, "unexpected argument '", arg,
                "': flags look like --name value");
    std::string name = arg.substr(2), value;
    bool inline_value = false;
    if (auto equals = name.find('='); equals != std::string::npos) {
      value = name.substr(equals + 1);
      name = name.substr(0, equals);
      inline_value = true;
    }
    auto it = flags_.find(name);
    usage_check(it != flags_.end(), "unknown flag --", name);
    Flag& flag = it->second;
    usage_check(!flag.given, "flag --", name, " given twice");
    if (flag.kind == Kind::Switch) {
      usage_check(!inline_value || value == "true" || value == "false", "switch --", name,
                  " takes no value (or =true/=false), got '", value, "'");
      flag.value = inline_value ? value : "true";
    } else {
      if (!inline_value) {
        usage_check(i + 1 < argc, "flag --", name, " needs a value");
        value = argv[++i];
      }
      flag.value = value;
    }
    flag.given = true;
    validate(name, flag);
  }
  for (const std::string& name : order_)
    usage_check(!flags_.at(name).required || flags_.at(name).given, "--", name, " is required");
  return true;
}

const Flags::Flag& Flags::find(const std::string& name) const {
  auto it = flags_.find(name);
  check(it != flags_.end(), "internal error: flag --", name, " was never declared");
  return it->second;
}

std::string Flags::get(const std::string& name) const { return find(name).value; }
bool Flags::was_given(const std::string& name) const { return find(name).given; }
bool Flags::get_bool(const std::string& name) const { return find(name).value == "true"; }

int64_t Flags::get_int(const std::string& name) const {
  int64_t value = 0;
  check(parse_int(find(name).value, value), "internal error: --", name, " is not a whole number");
  return value;
}

double Flags::get_double(const std::string& name) const {
  double value = 0;
  check(parse_real(find(name).value, value), "internal error: --", name, " is not a number");
  return value;
}

std::string Flags::usage() const {
  std::ostringstream out;
  out << "usage: " << program_ << " [flags]\n" << summary_ << "\n\nflags:\n";
  for (const std::string& name : order_) {
    const Flag& flag = flags_.at(name);
    std::string head = "  --" + name;
    if (flag.kind == Kind::Int) head += " N";
    else if (flag.kind == Kind::Real) head += " X";
    else if (flag.kind != Kind::Switch) head += " VALUE";
    out << head << std::string(head.size() < 28 ? 28 - head.size() : 1, ' ') << flag.help;
    if (flag.required) out << " (required)";
    else if (flag.kind != Kind::Switch && !flag.value.empty()) out << " (default " << flag.value << ")";
    out << "\n";
  }
  out << "  --help                    this text\n  --version                 the version\n";
  return out.str();
}

void print_version(const std::string& program) { std::printf("%s %s\n", program.c_str(), version()); }

int run_guarded(const std::string& program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& error) {
    std::fflush(stdout);
    if (error.point_to_help)
      std::fprintf(stderr, "%s: %s (see %s --help)\n", program.c_str(), error.what(), program.c_str());
    else
      std::fprintf(stderr, "%s: %s\n", program.c_str(), error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", program.c_str(), error.what());
    return 1;
  }
}

int run(Flags& flags, int argc, const char* const* argv, const std::function<int()>& body) {
  return run_guarded(flags.program(), [&] { return flags.parse(argc, argv) ? body() : 0; });
}

}  // namespace hkt::cli
