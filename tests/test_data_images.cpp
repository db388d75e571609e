#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include <catch2/catch.hpp>
#include <zlib.h>

#include "data/cifar.h"
#include "data/idx.h"
#include "tests/data_test_util.h"

using namespace hkt;
using namespace hkt::data;
using Catch::Contains;
using hkt::testing::TempDir;

namespace {

std::string big_endian(uint32_t value) {
  return {static_cast<char>(value >> 24), static_cast<char>(value >> 16), static_cast<char>(value >> 8),
          static_cast<char>(value)};
}

std::string idx_file(uint32_t magic, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& values) {
  std::string bytes = big_endian(magic);
  for (uint32_t extent : dims) bytes += big_endian(extent);
  bytes.append(values.begin(), values.end());
  return bytes;
}

// One gzip member of `data`, written by zlib's deflate (windowBits 31 = gzip).
std::string gzip(const std::string& data) {
  z_stream stream{};
  REQUIRE(deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&stream, static_cast<uLong>(data.size())) + 64, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&stream, Z_FINISH) == Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

std::vector<uint8_t> pattern(size_t count, uint32_t seed) {
  std::vector<uint8_t> values(count);
  uint32_t state = seed;
  for (uint8_t& value : values) {
    state = state * 1664525u + 1013904223u;
    value = static_cast<uint8_t>(state >> 24);
  }
  return values;
}

constexpr size_t kImage = 28 * 28;

}  // namespace

TEST_CASE("load_fashion_mnist: plain and gzipped IDX files round-trip") {
  TempDir dir;
  const auto train_images = pattern(3 * kImage, 1), test_images = pattern(2 * kImage, 2);
  const std::vector<uint8_t> train_labels = {7, 0, 9}, test_labels = {3, 3};
  dir.write("train-images-idx3-ubyte", idx_file(0x803, {3, 28, 28}, train_images));
  dir.write("train-labels-idx1-ubyte", idx_file(0x801, {3}, train_labels));
  // The test split gzipped; the images as two concatenated gzip members.
  const std::string images = idx_file(0x803, {2, 28, 28}, test_images);
  dir.write("t10k-images-idx3-ubyte.gz", gzip(images.substr(0, 1000)) + gzip(images.substr(1000)));
  dir.write("t10k-labels-idx1-ubyte.gz", gzip(idx_file(0x801, {2}, test_labels)));

  const Dataset train = load_fashion_mnist(dir.path().string(), true);
  REQUIRE(train.count == 3);
  CHECK(train.seq_len == 784);
  CHECK(train.vocab == 256);
  CHECK(train.classes == 10);
  CHECK(train.tokens == std::vector<int32_t>(train_images.begin(), train_images.end()));
  CHECK(train.labels == std::vector<int32_t>{7, 0, 9});
  CHECK(train.lengths == std::vector<int32_t>(3, 784));
  validate(train);

  const Dataset test = load_fashion_mnist(dir.path().string(), false);
  REQUIRE(test.count == 2);
  CHECK(test.tokens == std::vector<int32_t>(test_images.begin(), test_images.end()));
  CHECK(test.labels == std::vector<int32_t>{3, 3});

  const IdxArray array = read_idx((dir.path() / "t10k-images-idx3-ubyte.gz").string());
  CHECK(array.dims == std::vector<int64_t>{2, 28, 28});
  CHECK(array.values == test_images);
}

TEST_CASE("read_idx: bad magic, short header, truncated or overlong data") {
  TempDir dir;
  auto read = [&](const std::string& bytes) { return read_idx(dir.write("x-idx", bytes)); };
  const auto values = pattern(2 * kImage, 3);
  REQUIRE_THROWS_WITH(read(std::string(2, '\0')), Contains("x-idx: 2 bytes, too short for the 4-byte magic"));
  REQUIRE_THROWS_WITH(read(idx_file(0x903, {2, 28, 28}, values)), Contains("magic 0x903 at byte offset 0"));
  REQUIRE_THROWS_WITH(read(idx_file(0x1000803, {2, 28, 28}, values)), Contains("magic 0x1000803"));
  REQUIRE_THROWS_WITH(read(idx_file(0x805, {1, 1, 1, 1, 1}, {7})), Contains("magic 0x805"));
  REQUIRE_THROWS_WITH(read(idx_file(0x803, {2, 28}, {})),
                      Contains("header of rank 3 needs 16 bytes but the file ends at byte 12"));
  std::string truncated = idx_file(0x803, {2, 28, 28}, values);
  truncated.resize(1000);
  REQUIRE_THROWS_WITH(read(truncated), Contains("truncated: dims [2, 28, 28] promise 1568 data bytes ending at "
                                                "byte offset 1584 but the file ends at byte offset 1000"));
  REQUIRE_THROWS_WITH(read(idx_file(0x803, {60000, 28, 28}, values)), Contains("truncated: dims [60000, 28, 28]"));
  REQUIRE_THROWS_WITH(read(idx_file(0x803, {0xffffffffu, 0xffffffffu, 0xffffffffu}, values)),
                      Contains("dims [4294967295, 4294967295]... promise more than 2^32 bytes"));
  REQUIRE_THROWS_WITH(read(idx_file(0x801, {3}, {1, 2, 3, 4, 5})), Contains("2 trailing bytes after byte offset 11"));
  REQUIRE_THROWS_WITH(read_idx((dir.path() / "none").string()), Contains("none: no such file"));
  CHECK(read(idx_file(0x801, {3}, {1, 2, 3})).values == std::vector<uint8_t>{1, 2, 3});
}

TEST_CASE("read_idx: truncated and corrupt gzip streams") {
  TempDir dir;
  const std::string compressed = gzip(idx_file(0x803, {2, 28, 28}, pattern(2 * kImage, 4)));
  const std::string cut = dir.write("cut.gz", compressed.substr(0, compressed.size() / 2));
  REQUIRE_THROWS_WITH(read_idx(cut), Contains("cut.gz: gzip data truncated: the file ends at byte"));
  std::string bad_method = compressed;
  bad_method[2] = 7;  // compression method must be 8 (deflate)
  REQUIRE_THROWS_WITH(read_idx(dir.write("method.gz", bad_method)), Contains("method.gz: corrupt gzip data"));
  std::string bad_crc = compressed;
  bad_crc[bad_crc.size() - 6] ^= 0x5a;  // inside the CRC-32 trailer
  REQUIRE_THROWS_WITH(read_idx(dir.write("crc.gz", bad_crc)), Contains("crc.gz: corrupt gzip data"));
  REQUIRE_THROWS_WITH(read_idx(dir.write("tail.gz", compressed + "junk")),
                      Contains("4 bytes of trailing garbage after the gzip data"));
  const std::string zeros(10000, '\0');
  CHECK(read_maybe_gzipped(dir.write("zeros.gz", gzip(zeros)), "test") == zeros);
  CHECK(read_maybe_gzipped(dir.write("zeros", zeros), "test") == zeros);
  REQUIRE_THROWS_WITH(read_maybe_gzipped(dir.write("bomb.gz", gzip(zeros)), "test", 1000),
                      Contains("test: " + (dir.path() / "bomb.gz").string() + ": decompresses to more than 1000 bytes"));
  // Offsets of a gzipped file count in its decompressed data.
  std::string short_data = idx_file(0x801, {10}, {1, 2, 3});
  REQUIRE_THROWS_WITH(read_idx(dir.write("short.gz", gzip(short_data))),
                      Contains("short.gz (decompressed): truncated: dims [10] promise 10 data bytes"));
}

TEST_CASE("load_fashion_mnist: inconsistent files are errors") {
  TempDir dir;
  const std::string folder = dir.path().string();
  REQUIRE_THROWS_WITH(load_fashion_mnist(folder, true), Contains("train-images-idx3-ubyte.gz exists"));
  dir.write("train-images-idx3-ubyte", idx_file(0x803, {2, 28, 28}, pattern(2 * kImage, 5)));
  dir.write("train-labels-idx1-ubyte", idx_file(0x801, {2}, {4, 10}));
  REQUIRE_THROWS_WITH(load_fashion_mnist(folder, true),
                      Contains("train-labels-idx1-ubyte: label 10 at byte offset 9 (example 1) outside 0-9"));
  dir.write("train-labels-idx1-ubyte", idx_file(0x801, {3}, {4, 1, 2}));
  REQUIRE_THROWS_WITH(load_fashion_mnist(folder, true), Contains("dims [3] but the images are [2, 28, 28]"));
  dir.write("train-images-idx3-ubyte", idx_file(0x803, {3, 28, 27}, pattern(3 * 28 * 27, 5)));
  REQUIRE_THROWS_WITH(load_fashion_mnist(folder, true), Contains("dims [3, 28, 27], expected [n, 28, 28]"));
}

TEST_CASE("Fashion-MNIST from Debian's dataset-fashion-mnist package") {
  std::string directory;
  try {
    directory = default_fashion_mnist_directory();
  } catch (const Error& error) {
    WARN("skipped: " << error.what());
    return;
  }
  for (bool train : {true, false}) {
    const Dataset data = load_fashion_mnist(directory, train);
    const int64_t expected = train ? 60000 : 10000;
    REQUIRE(data.count == expected);
    validate(data);
    std::vector<int64_t> per_class(10, 0);
    for (int32_t label : data.labels) ++per_class[static_cast<size_t>(label)];
    CHECK(per_class == std::vector<int64_t>(10, expected / 10));  // the data set is balanced
    const auto [low, high] = std::minmax_element(data.tokens.begin(), data.tokens.end());
    CHECK(*low == 0);
    CHECK(*high == 255);
  }
}

namespace {

// A CIFAR-10 record: label, then the R, G, B planes.
std::string cifar_record(uint8_t label, uint32_t seed) {
  const auto pixels = pattern(3072, seed);
  return std::string(1, static_cast<char>(label)) + std::string(pixels.begin(), pixels.end());
}

}  // namespace

TEST_CASE("CIFAR-10: grey and colour tokens from the binary batches") {
  TempDir dir;
  std::string records[6];
  std::vector<int32_t> labels;
  for (int file = 0; file < 6; ++file) {
    for (int r = 0; r <= file % 2; ++r) {  // 1 or 2 records per file
      const auto label = static_cast<uint8_t>((file * 3 + r) % 10);
      records[file] += cifar_record(label, static_cast<uint32_t>(10 * file + r));
      if (file < 5) labels.push_back(label);
    }
    dir.write("cifar-10-batches-bin/" + (file < 5 ? "data_batch_" + std::to_string(file + 1) : "test_batch") + ".bin",
              records[file]);
  }
  const std::string all_train = records[0] + records[1] + records[2] + records[3] + records[4];

  const Dataset colour = load_cifar10(dir.path().string(), true, CifarPixels::Colour);  // finds the subfolder
  REQUIRE(colour.count == 7);
  CHECK(colour.seq_len == 3072);
  CHECK(colour.vocab == 256);
  CHECK(colour.labels == labels);
  for (size_t r = 0; r < 7; ++r)
    for (size_t p = 0; p < 3072; ++p)
      REQUIRE(colour.tokens[r * 3072 + p] == static_cast<uint8_t>(all_train[r * 3073 + 1 + p]));
  validate(colour);

  const Dataset grey = load_cifar10(dir.path().string(), true, CifarPixels::Grey);
  REQUIRE(grey.count == 7);
  CHECK(grey.seq_len == 1024);
  CHECK(grey.lengths == std::vector<int32_t>(7, 1024));
  for (size_t r = 0; r < 7; ++r) {
    for (size_t p = 0; p < 1024; ++p) {
      const auto* record = reinterpret_cast<const uint8_t*>(all_train.data() + r * 3073 + 1);
      const double luma = 0.299 * record[p] + 0.587 * record[1024 + p] + 0.114 * record[2048 + p];
      if (std::abs(luma - std::floor(luma) - 0.5) < 1e-9) continue;  // an exact tie: rounding direction by float noise
      REQUIRE(grey.tokens[r * 1024 + p] == std::lround(luma));
    }
  }
  const Dataset test = load_cifar10((dir.path() / "cifar-10-batches-bin").string(), false, CifarPixels::Grey);
  CHECK(test.count == 2);
  // Pure colours: round(0.299 · 255) = 76, round(0.587 · 255) = 150, round(0.114 · 255) = 29.
  std::string pure(1, '\x04');
  for (int plane = 0; plane < 3; ++plane) pure += std::string(1024, plane == 0 ? '\xff' : '\0');
  CHECK(read_cifar10_file(dir.write("pure.bin", pure), CifarPixels::Grey).tokens[0] == 76);
}

TEST_CASE("CIFAR-10: partial records, bad labels and missing files are errors") {
  TempDir dir;
  const std::string two = cifar_record(1, 1) + cifar_record(2, 2);
  REQUIRE_THROWS_WITH(read_cifar10_file(dir.write("part.bin", two + std::string(100, 'x')), CifarPixels::Grey),
                      Contains("part.bin: size 6246 is not a multiple of the record size 3073 (a partial record "
                               "starts at byte offset 6146)"));
  REQUIRE_THROWS_WITH(read_cifar10_file(dir.write("short.bin", two.substr(0, 3000)), CifarPixels::Colour),
                      Contains("size 3000 is not a multiple of the record size 3073 (a partial record starts at "
                               "byte offset 0)"));
  REQUIRE_THROWS_WITH(read_cifar10_file(dir.write("label.bin", cifar_record(3, 1) + cifar_record(10, 2)),
                                        CifarPixels::Grey),
                      Contains("label.bin: record 1 at byte offset 3073 has label 10"));
  REQUIRE_THROWS_WITH(read_cifar10_file(dir.write("empty.bin", ""), CifarPixels::Grey), Contains("empty file"));
  for (int i = 1; i <= 5; ++i)
    if (i != 3) dir.write("data_batch_" + std::to_string(i) + ".bin", two);
  REQUIRE_THROWS_WITH(load_cifar10(dir.path().string(), true, CifarPixels::Grey),
                      Contains("data_batch_3.bin: no such file"));
  REQUIRE_THROWS_WITH(load_cifar10(dir.path().string(), false, CifarPixels::Grey),
                      Contains("test_batch.bin: no such file"));
}

TEST_CASE("read_idx: a gzipped file inflates no further than its own header promises (a gzip bomb)") {
  hkt::testing::TempDir dir;
  // 2 labels promised, 20 MB of zeros behind them: stopped after 4 + 4 + 2 + 1 bytes.
  const std::string bomb = idx_file(0x801, {2}, {1, 2}) + std::string(20'000'000, '\0');
  const std::string path = dir.write("bomb.gz", gzip(bomb));
  CHECK(bomb.size() > 200 * std::filesystem::file_size(path));  // Z_BEST_SPEED: about 230:1
  REQUIRE_THROWS_WITH(read_idx(path), Contains(path + ": decompresses to more than 11 bytes"));
  // A header promising more than 2^32 bytes falls back to the format's limit and is named as such.
  const std::string huge = dir.write("huge.gz", gzip(idx_file(0x803, {100000, 1000, 1000}, {})));
  REQUIRE_THROWS_WITH(read_idx(huge), Contains("dims [100000, 1000, 1000]... promise more than 2^32 bytes"));
  // One byte more than promised is still named as trailing bytes.
  const std::string extra = dir.write("extra.gz", gzip(idx_file(0x801, {2}, {1, 2, 3})));
  REQUIRE_THROWS_WITH(read_idx(extra), Contains("1 trailing bytes after byte offset 10"));
  // A file shorter than its 20-byte look-ahead reads as before.
  CHECK(read_idx(dir.write("short.gz", gzip(idx_file(0x801, {2}, {1, 2})))).values == std::vector<uint8_t>{1, 2});
}

TEST_CASE("read_idx: a gzip header promising more than the caller takes, or than the file can hold, stops before inflating") {
  hkt::testing::TempDir dir;
  // 1.1e9 pixels promised in a gzip file of a few KB: deflate cannot pack that much into it.
  const std::string header_only = idx_file(0x803, {1403000, 28, 28}, {}) + std::string(4096, '\0');
  const std::string path = dir.write("promise.gz", gzip(header_only));
  REQUIRE_THROWS_WITH(read_idx(path), Contains("dims [1403000, 28, 28] promise 1099952016 bytes, more than a"));
  REQUIRE_THROWS_WITH(read_idx(path), Contains("-byte gzip file can hold (deflate packs 1032:1 at most)"));
  // The caller's own bound: 10 labels allow 7840 pixels, not 9 times that.
  const std::string images = dir.write("images.gz", gzip(idx_file(0x803, {90, 28, 28}, std::vector<uint8_t>(90 * 784))));
  REQUIRE_THROWS_WITH(read_idx(images, 10 * 784), Contains("dims [90, 28, 28] promise 70560 values, more than the 7840 "
                                                            "expected here"));
  CHECK(read_idx(images, 90 * 784).values.size() == 90 * 784);
}
