#pragma once
// hkt-bench measures each case in a child process, this program run again
// with other arguments, so that the child's peak RSS is its own.
#include <string>
#include <vector>

namespace hkt::bench {

struct ChildOutput {
  bool ok = false;     // exited with status 0
  std::string output;  // its standard output
  std::string error;   // why not ok
};

// Runs /proc/self/exe with args (args[0] is the program name) and collects its stdout.
ChildOutput run_self(const std::vector<std::string>& args);

}  // namespace hkt::bench
