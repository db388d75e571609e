#pragma once
// The command-line parser of every tool: flags are declared with a kind (text,
// a choice, a whole number or a real number in a range, a switch), a default
// and a help line, then parsed from "--name value" or "--name=value". Every
// value is checked against its kind and range while parsing, so a tool never
// sees "--threads 4294967297" wrap or "--lr -1" slip through; the error names
// the flag and the allowed range. --help prints each flag with its default,
// --version the project's version.
//
// Exit codes, the same for every tool (docs/TOOLS.md): 0 done, 1 the work
// failed (a missing or bad file, a failed check), 2 the command line is wrong
// (UsageError). cli::run turns an exception into the message and the code.
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "engine/error.h"

namespace hkt::cli {

// The command line is wrong: exit code 2, with a pointer to --help unless
// the flag was fine but the machine lacks what it names (--device cuda).
struct UsageError : Error {
  explicit UsageError(const std::string& message, bool point_to_help = true)
      : Error(message), point_to_help(point_to_help) {}
  bool point_to_help;
};

template <class... Args>
void usage_check(bool condition, const Args&... parts) {
  if (condition) return;
  std::ostringstream message;
  (message << ... << parts);
  throw UsageError(message.str());
}

inline constexpr int64_t kIntMax = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kThreadsMax = 4096;  // the most CPU threads a --threads flag takes
inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

class Flags {
 public:
  Flags(std::string program, std::string summary);

  void add(const std::string& name, const std::string& default_value, const std::string& help);  // any text
  void add_choice(const std::string& name, const std::string& default_value, std::vector<std::string> choices,
                  const std::string& help);
  void add_int(const std::string& name, int64_t default_value, const std::string& help, int64_t min,
               int64_t max = kIntMax);
  // A finite real number in [min, max], or (min, max] with min_exclusive.
  void add_real(const std::string& name, double default_value, const std::string& help, double min,
                double max = kInfinity, bool min_exclusive = false);
  // Switches take no value: "--causal" sets them to true.
  void add_switch(const std::string& name, const std::string& help);
  // Flags without a usable default: parse fails when one is not given.
  void require(const std::string& name);

  // Parses argv[1..]; returns false when --help or --version was asked (and
  // printed). Throws UsageError naming the flag at fault.
  bool parse(int argc, const char* const* argv);

  const std::string& program() const { return program_; }
  std::string get(const std::string& name) const;
  int64_t get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  bool was_given(const std::string& name) const;  // on the command line, not the default
  std::string usage() const;

 private:
  enum class Kind { Text, Choice, Int, Real, Switch };
  struct Flag {
    Kind kind = Kind::Text;
    std::string value, help;
    std::vector<std::string> choices;
    int64_t int_min = 0, int_max = 0;
    double real_min = 0, real_max = 0;
    bool min_exclusive = false, required = false, given = false;
  };
  Flag& declare(const std::string& name, Kind kind, std::string default_value, const std::string& help);
  const Flag& find(const std::string& name) const;
  void validate(const std::string& name, const Flag& flag) const;

  std::string program_, summary_;
  std::vector<std::string> order_;
  std::map<std::string, Flag> flags_;
};

// Prints "<program> <version>" (--version of a tool that parses by itself).
void print_version(const std::string& program);

// A tool's main: parses the flags (false: --help or --version, exit 0) and
// runs `body`, whose return value is the exit code. A UsageError prints
// "<program>: <message> (see <program> --help)" and exits 2; any other
// exception prints "<program>: <message>" and exits 1. Messages from the
// library start with the user's path or the flag, never a program name.
int run(Flags& flags, int argc, const char* const* argv, const std::function<int()>& body);

// The same for code that has parsed already (subcommands).
int run_guarded(const std::string& program, const std::function<int()>& body);

}  // namespace hkt::cli
