#include <catch2/catch.hpp>

#include "data/dataset.h"

using namespace hkt;
using namespace hkt::data;
using Catch::Contains;

namespace {

// 4 examples of length 3: example i holds tokens 10i+1 .. (padded), label i % 2.
Dataset small_dataset() {
  Dataset data;
  data.count = 4;
  data.seq_len = 3;
  data.vocab = 40;
  data.classes = 2;
  data.pad_id = 0;
  data.tokens = {1, 2, 0, 11, 12, 13, 21, 0, 0, 31, 32, 0};
  data.lengths = {2, 3, 1, 2};
  data.labels = {0, 1, 0, 1};
  return data;
}

}  // namespace

TEST_CASE("make_batch gathers int64 rows, lengths and labels") {
  const Dataset data = small_dataset();
  validate(data);
  const Batch batch = make_batch(data, {3, 0, 3});
  CHECK(batch.tokens.dtype() == DType::Int64);
  CHECK(batch.tokens.shape() == Shape{3, 3});
  CHECK(batch.lengths.shape() == Shape{3});
  CHECK(batch.labels.shape() == Shape{3});
  CHECK(batch.tokens.device() == Device::cpu());
  CHECK(batch.tokens.to_vector<int64_t>() == std::vector<int64_t>{31, 32, 0, 1, 2, 0, 31, 32, 0});
  CHECK(batch.lengths.to_vector<int64_t>() == std::vector<int64_t>{2, 2, 2});
  CHECK(batch.labels.to_vector<int64_t>() == std::vector<int64_t>{1, 0, 1});

  REQUIRE_THROWS_WITH(make_batch(data, {0, 4}), "make_batch: index 4 (position 1) outside [0, 4)");
  REQUIRE_THROWS_WITH(make_batch(data, {-1}), "make_batch: index -1 (position 0) outside [0, 4)");
  REQUIRE_THROWS_WITH(make_batch(data, {}), "make_batch: no indices");
  Dataset broken = data;
  broken.tokens.pop_back();
  REQUIRE_THROWS_WITH(make_batch(broken, {0}), Contains("holds 11 tokens, 4 lengths, 4 labels"));
}

TEST_CASE("split_off keeps order and moves the last examples to the second part") {
  const Dataset data = small_dataset();
  const auto [train, valid] = split_off(data, 1);
  CHECK(train.count == 3);
  CHECK(valid.count == 1);
  CHECK(train.tokens == std::vector<int32_t>(data.tokens.begin(), data.tokens.begin() + 9));
  CHECK(valid.tokens == std::vector<int32_t>{31, 32, 0});
  CHECK(train.lengths == std::vector<int32_t>{2, 3, 1});
  CHECK(valid.labels == std::vector<int32_t>{1});
  for (const Dataset* part : {&train, &valid}) {
    CHECK(part->seq_len == 3);
    CHECK(part->vocab == 40);
    CHECK(part->classes == 2);
    validate(*part);
  }
  CHECK(split_off(data, 0).second.count == 0);
  CHECK(split_off(data, 4).first.count == 0);
  REQUIRE_THROWS_WITH(split_off(data, 5), "split_off: cannot take 5 of 4 examples");
  REQUIRE_THROWS_WITH(split_off(data, -1), "split_off: cannot take -1 of 4 examples");
}

TEST_CASE("validate names the bad example") {
  Dataset data = small_dataset();
  data.lengths[2] = 4;
  REQUIRE_THROWS_WITH(validate(data, "test"), "test: example 2 has length 4 outside [1, 3]");
  data = small_dataset();
  data.labels[1] = 2;
  REQUIRE_THROWS_WITH(validate(data), "dataset: example 1 has label 2 outside [0, 2)");
  data = small_dataset();
  data.tokens[7] = 40;
  REQUIRE_THROWS_WITH(validate(data), "dataset: example 2 has token 40 outside [0, 40)");
  data = small_dataset();
  data.labels.pop_back();
  REQUIRE_THROWS_WITH(validate(data), Contains("12 tokens, 4 lengths, 3 labels for 4 examples of length 3"));
}
