#pragma once
// A small command-line parser for the tools: flags are declared with a
// default and a help line, then parsed from "--name value" or "--name=value".
// Unknown flags, missing or malformed values are hkt::Error with the flag named.
#include <map>
#include <string>
#include <vector>

namespace hkt::cli {

class Flags {
 public:
  explicit Flags(std::string program, std::string summary);

  void add(const std::string& name, const std::string& default_value, const std::string& help);
  // Switches take no value: "--causal" sets them to true.
  void add_switch(const std::string& name, const std::string& help);

  // Parses argv[1..]; returns false when --help was asked (usage printed).
  bool parse(int argc, const char* const* argv);

  std::string get(const std::string& name) const;
  int64_t get_int(const std::string& name) const;  // whole number, range-checked
  double get_double(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  bool was_given(const std::string& name) const;  // on the command line, not the default
  std::string usage() const;

 private:
  struct Flag {
    std::string value, help;
    bool is_switch = false, given = false;
  };
  const Flag& find(const std::string& name) const;

  std::string program_, summary_;
  std::vector<std::string> order_;
  std::map<std::string, Flag> flags_;
};

}  // namespace hkt::cli
