#include "tests/gradcheck.h"

using namespace hkt;

TEST_CASE("the same seed gives the same numbers; another seed does not") {
  Generator a(42), b(42), c(43);
  auto x = randn({100}, a).to_vector<float>(), y = randn({100}, b).to_vector<float>();
  auto z = randn({100}, c).to_vector<float>();
  CHECK(x == y);
  CHECK(x != z);
}

TEST_CASE("normal and uniform have the right moments") {
  Generator generator(7);
  const int n = 200000;
  double sum_n = 0, sum_n2 = 0, sum_u = 0, min_u = 1, max_u = 0;
  for (int i = 0; i < n; ++i) {
    double z = generator.normal(), u = generator.uniform();
    sum_n += z;
    sum_n2 += z * z;
    sum_u += u;
    min_u = std::min(min_u, u);
    max_u = std::max(max_u, u);
  }
  CHECK(std::abs(sum_n / n) < 0.01);          // standard error 0.0022
  CHECK(std::abs(sum_n2 / n - 1.0) < 0.02);   // standard error 0.0032
  CHECK(std::abs(sum_u / n - 0.5) < 0.005);   // standard error 0.00065
  CHECK(min_u >= 0.0);
  CHECK(max_u < 1.0);
}

TEST_CASE("generator state can be saved and restored") {
  Generator generator(9);
  generator.normal();  // leaves a cached spare
  auto saved = generator.state();
  double next = generator.normal(), after = generator.normal();
  generator.set_state(saved);
  CHECK(generator.normal() == next);
  CHECK(generator.normal() == after);
}

TEST_CASE("rand_uniform respects its bounds and rejects integer dtypes") {
  Generator generator(3);
  for (double v : rand_uniform({1000}, generator, -2.0, 3.0, DType::Float64).to_vector<double>()) {
    CHECK(v >= -2.0);
    CHECK(v < 3.0);
  }
  REQUIRE_THROWS_WITH(randn({2}, generator, DType::Int32), "randn: dtype must be floating, got int32");
}
