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

// How fail() writes one part of its message: with <<, or by an overload of
// append_message for the part's type (a Shape here; Tensor and Device where
// they are declared, found by argument-dependent lookup).
void append_message(std::ostream& out, const Shape& shape);
template <class T>
void append_message(std::ostream& out, const T& part) {
  out << part;
}

// Out of line and cold: a caller's frame holds no stream of its own, and the
// error path stays out of the hot code. (Inlined under the sanitizer build's
// -O1, the stream took listops' recursive parser to 2 KiB a frame, and 4,096
// nested operators past the 8 MiB stack.)
template <class... Args>
[[noreturn, gnu::noinline, gnu::cold]] void fail(const Args&... parts) {
  std::ostringstream message;
  (append_message(message, parts), ...);
  throw Error(message.str());
}

// check() evaluates its arguments on every call and formats them only when
// the condition fails: pass shapes, tensors and devices themselves, never
// strings formatted up front. Formatted eagerly (shape_str, Tensor::str), the
// messages no one read took most of a small op's time: add on 512 floats
// cost 6.4 µs, and HKT's training step about 2 ms more on two threads
// (docs/PERFORMANCE.md).
template <class... Args>
void check(bool condition, const Args&... parts) {
  if (!condition) fail(parts...);
}

}  // namespace hkt
