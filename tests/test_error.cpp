// hkt::check and hkt::fail (engine/error.h): a message is formatted only when
// a check fails, each part through append_message.
#include <catch2/catch.hpp>

#include "hkt.h"

namespace probe {

// A message part that counts how often it is formatted; its append_message
// is found by argument-dependent lookup, as Tensor's and Device's are.
struct Counted {
  int* formatted;
};
void append_message(std::ostream& out, const Counted& part) {
  ++*part.formatted;
  out << "counted";
}

}  // namespace probe

using namespace hkt;

TEST_CASE("check formats its message only when the condition fails") {
  int formatted = 0;
  const probe::Counted part{&formatted};
  for (int i = 0; i < 100; ++i) check(true, "never shown: ", part);
  CHECK(formatted == 0);
  REQUIRE_THROWS_WITH(check(false, "op: ", part, " and ", 3), "op: counted and 3");
  CHECK(formatted == 1);
}

TEST_CASE("shapes, tensors and devices print themselves in messages") {
  const Tensor t = Tensor::zeros({4, 3});
  REQUIRE_THROWS_WITH(fail("op: ", Shape{2, 5}, ", ", t, " on ", t.device(), ", ", Tensor()),
                      "op: [2, 5], float32[4, 3] on cpu, undefined");
  REQUIRE_THROWS_WITH(fail("op: ", Shape{}), "op: []");
  CHECK(shape_str({7, 1}) == "[7, 1]");  // the same text as a string, for messages built elsewhere
}
