#include <catch2/catch.hpp>

#include "data/imdb.h"
#include "tests/data_test_util.h"

using namespace hkt;
using namespace hkt::data;
using Catch::Contains;
using hkt::testing::TempDir;

namespace {

std::vector<int32_t> byte_tokens(const std::string& text, size_t seq_len) {
  std::vector<int32_t> tokens(seq_len, 0);
  for (size_t i = 0; i < std::min(text.size(), seq_len); ++i) tokens[i] = static_cast<uint8_t>(text[i]) + 1;
  return tokens;
}

}  // namespace

TEST_CASE("load_imdb: bytes + 1 as tokens, neg then pos in file-name order, truncated or padded") {
  TempDir dir;
  const std::string root = (dir.path() / "aclImdb").string();
  dir.write("aclImdb/train/neg/2_3.txt", "Bad.");
  dir.write("aclImdb/train/neg/10_1.txt", "Awful film, truly awful.");  // longer than seq_len
  dir.write("aclImdb/train/neg/0_2.txt", std::string("caf\xc3\xa9\n\0x", 7));  // non-ASCII, NUL, newline
  dir.write("aclImdb/train/pos/0_9.txt", "Great!");
  dir.write("aclImdb/train/pos/notes.md", "not a review");
  dir.write("aclImdb/train/unsup/0_0.txt", "ignored");
  dir.write("aclImdb/test/neg/0_1.txt", "no");
  dir.write("aclImdb/test/pos/0_8.txt", "yes");

  const Dataset train = load_imdb(root, true, 8);
  REQUIRE(train.count == 4);
  CHECK(train.seq_len == 8);
  CHECK(train.vocab == 257);
  CHECK(train.classes == 2);
  CHECK(train.pad_id == 0);
  CHECK(train.labels == std::vector<int32_t>{0, 0, 0, 1});
  CHECK(train.lengths == std::vector<int32_t>{7, 8, 4, 6});
  const std::string texts[] = {std::string("caf\xc3\xa9\n\0x", 7), "Awful film", "Bad.", "Great!"};
  for (size_t i = 0; i < 4; ++i) {
    INFO("example " << i);
    CHECK(std::vector<int32_t>(train.tokens.begin() + static_cast<std::ptrdiff_t>(8 * i),
                               train.tokens.begin() + static_cast<std::ptrdiff_t>(8 * i + 8)) ==
          byte_tokens(texts[i], 8));
  }
  CHECK(train.tokens[3] == 0xc3 + 1);
  CHECK(train.tokens[6] == 1);  // the NUL byte is token 1, not the pad
  validate(train);

  const Dataset test = load_imdb(root, false, 1024);
  CHECK(test.count == 2);
  CHECK(test.labels == std::vector<int32_t>{0, 1});
  CHECK(test.lengths == std::vector<int32_t>{2, 3});
}

TEST_CASE("load_imdb: missing folders, empty folders and empty reviews are errors") {
  TempDir dir;
  const std::string root = (dir.path() / "aclImdb").string();
  REQUIRE_THROWS_WITH(load_imdb(root, true, 16), Contains("aclImdb/train: no such folder"));
  dir.write("aclImdb/train/neg/0_1.txt", "bad");
  REQUIRE_THROWS_WITH(load_imdb(root, true, 16), Contains("aclImdb/train/pos: no such folder"));
  dir.write("aclImdb/train/pos/readme.md", "no reviews here");
  REQUIRE_THROWS_WITH(load_imdb(root, true, 16), Contains("aclImdb/train/pos: no .txt files"));
  dir.write("aclImdb/train/pos/0_9.txt", "");
  REQUIRE_THROWS_WITH(load_imdb(root, true, 16), Contains("pos/0_9.txt: empty review"));
  dir.write("aclImdb/train/pos/0_9.txt", "good");
  REQUIRE_THROWS_WITH(load_imdb(root, true, 0), Contains("seq_len 0 outside [1, 2^24]"));
  CHECK(load_imdb(root, true, 16).count == 2);
}
