#pragma once
// hkt::Error: the one exception type of the library. Messages name the op and
// the shapes it got, e.g. "matmul: [4, 3] x [5, 2]: inner sizes 3 and 5 differ".
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace hkt {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using Shape = std::vector<int64_t>;

// "[4, 3]"
std::string shape_str(const Shape& shape);

template <class... Args>
[[noreturn]] void fail(const Args&... parts) {
  std::ostringstream message;
  (message << ... << parts);
  throw Error(message.str());
}

template <class... Args>
void check(bool condition, const Args&... parts) {
  if (!condition) fail(parts...);
}

}  // namespace hkt
