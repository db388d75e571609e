// The README's API example is examples/api-example.cpp, built and run by
// CTest (in this build, and against the installed package as a separate
// project); this test keeps the two from drifting apart.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("the README's C++ example is examples/api-example.cpp verbatim") {
  std::string readme = read_file(HKT_SOURCE_DIR "/README.md");
  std::string example = read_file(HKT_SOURCE_DIR "/examples/api-example.cpp");
  CHECK(readme.find("```cpp\n" + example + "```") != std::string::npos);
}
