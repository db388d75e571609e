#include <unistd.h>

#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/safetensors.h"
#include "ops/shape.h"

using namespace hkt;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

// A fresh folder per test case, removed at the end.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("hkt_test_safetensors_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string le64(uint64_t value) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(value >> (8 * i));
  return bytes;
}

// A file as the format says: the header length, the header, the data.
std::string safetensors_bytes(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

template <class T>
std::string raw(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

template <class T>
void check_same(const Tensor& loaded, const Tensor& saved) {
  CHECK(loaded.dtype() == saved.dtype());
  CHECK(loaded.shape() == saved.shape());
  CHECK(loaded.device() == Device::cpu());
  CHECK(loaded.to_vector<T>() == saved.to_vector<T>());
}

}  // namespace

TEST_CASE("safetensors: round trip of every dtype, 0-d and empty tensors, and metadata") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  NamedTensors tensors = {
      {"blocks.0.weight", Tensor::from_vector<float>({1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, -7.0f}, {2, 3})},
      {"f64", Tensor::from_vector<double>({0.1, -1e300, 4.9e-324}, {3})},
      {"tokens", Tensor::from_vector<int32_t>({1, -2, 2147483647, -2147483647 - 1}, {2, 2})},
      {"optim.step", Tensor::from_vector<int64_t>({int64_t{1} << 62}, {})},
      {"empty", Tensor::zeros({0, 5}, DType::Float64)},
      {"scalar", Tensor::scalar(2.5)},
      {"view", reshape(Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {6}), {3, 2})},
  };
  const std::map<std::string, std::string> metadata = {{"config", R"({"d_model": 64, "causal": true})"},
                                                       {"note", "caf\xC3\xA9\n\"quoted\""}};
  save_safetensors(path, tensors, metadata);
  CHECK_FALSE(fs::exists(path + ".tmp"));

  SafetensorsFile file = load_safetensors(path);
  CHECK(file.metadata == metadata);
  REQUIRE(file.tensors.size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    INFO(tensors[i].first);
    CHECK(file.tensors[i].first == tensors[i].first);  // written in order, so read in the same order
  }
  check_same<float>(file.tensors[0].second, tensors[0].second);
  check_same<double>(file.tensors[1].second, tensors[1].second);
  check_same<int32_t>(file.tensors[2].second, tensors[2].second);
  check_same<int64_t>(file.tensors[3].second, tensors[3].second);
  check_same<double>(file.tensors[4].second, tensors[4].second);
  check_same<float>(file.tensors[5].second, tensors[5].second);
  check_same<float>(file.tensors[6].second, tensors[6].second);

  // No tensors and no metadata is a valid file too; saving again replaces the file.
  save_safetensors(path, {}, {});
  CHECK(read_bytes(path) == safetensors_bytes("{}      ", ""));
  SafetensorsFile nothing = load_safetensors(path);
  CHECK(nothing.tensors.empty());
  CHECK(nothing.metadata.empty());
}

TEST_CASE("safetensors: golden bytes of a file built by hand") {
  TempDir dir;
  // 8-byte little-endian header length, the compact JSON header padded with
  // spaces to a multiple of 8, then the little-endian data with no gaps.
  std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I64","shape":[],"data_offsets":[8,16]}})";
  REQUIRE(header.size() == 138);  // padded with 6 spaces to 144
  const std::string data = std::string("\x00\x00\x80\x3F", 4)     // 1.0f
                           + std::string("\x00\x00\x00\xC0", 4)    // -2.0f
                           + std::string("\x07\0\0\0\0\0\0\0", 8);  // int64 7
  const std::string golden = std::string("\x90\0\0\0\0\0\0\0", 8) + header + "      " + data;

  const std::string path = dir.file("golden.safetensors");
  save_safetensors(path,
                   {{"a", Tensor::from_vector<float>({1.0f, -2.0f}, {2})}, {"b", Tensor::from_vector<int64_t>({7}, {})}},
                   {{"format", "pt"}});
  CHECK(read_bytes(path) == golden);

  // A header that needs 2 spaces of padding: 54 bytes become 56.
  const std::string short_header = R"({"x":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})";
  REQUIRE(short_header.size() == 54);
  save_safetensors(path, {{"x", Tensor::from_vector<double>({0.5}, {1})}});
  CHECK(read_bytes(path) == safetensors_bytes(short_header + "  ", raw<double>({0.5})));

  // The hand-built bytes load, including members in an order other than the data's.
  const std::string reordered =
      R"({"b":{"data_offsets":[8,16],"shape":[],"dtype":"I64"},"__metadata__":{"format":"pt"},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}} )";
  write_bytes(path, safetensors_bytes(reordered, data));
  SafetensorsFile file = load_safetensors(path);
  REQUIRE(file.tensors.size() == 2);
  CHECK(file.tensors[0].first == "a");
  CHECK(file.tensors[0].second.to_vector<float>() == std::vector<float>{1.0f, -2.0f});
  CHECK(file.tensors[1].first == "b");
  CHECK(file.tensors[1].second.dim() == 0);
  CHECK(file.tensors[1].second.item() == 7.0);
  CHECK(file.metadata == std::map<std::string, std::string>{{"format", "pt"}});
}

TEST_CASE("safetensors: every corruption is rejected naming the file and the fault") {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  auto tensor = [](const std::string& name, const std::string& dtype, const std::string& shape,
                   const std::string& offsets) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
  };
  const std::string eight(8, '\x01');
  struct Case {
    const char* what;
    std::string bytes;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"empty file", "", "file is 0 bytes, shorter than the 8-byte header length"},
      {"short file", std::string("\x05\0\0\0\0", 5), "file is 5 bytes, shorter than the 8-byte header length"},
      {"header past the end", le64(1000) + "{}", "header length 1000 at byte 0 runs past the end of the file (10 bytes)"},
      {"huge header length", le64(200'000'000) + "{}", "header length 200000000 at byte 0 is larger than the limit"},
      {"header length 2^64-1", le64(~uint64_t{0}) + "{}", "is larger than the limit"},
      {"empty header", le64(0), "header is not valid JSON at byte 8: expected a value"},
      {"header not JSON", safetensors_bytes("{\"a\":nope}", ""), "header is not valid JSON at byte 13: expected 'null'"},
      {"trailing garbage", safetensors_bytes("{} x", ""), "header is not valid JSON at byte 11: expected the end"},
      {"header not an object", safetensors_bytes("[1,2]   ", ""), "header at byte 8 is an array, expected an object"},
      {"unknown dtype", safetensors_bytes("{" + tensor("w", "F8_E4M3", "[8]", "[0,8]") + "}", eight),
       "tensor \"w\": unsupported dtype \"F8_E4M3\" (expected F32, F64, F16, BF16, I32 or I64)"},
      {"F16 bytes that do not match the shape", safetensors_bytes("{" + tensor("w", "F16", "[3]", "[0,8]") + "}", eight),
       "shape [3] of F16 needs 6 bytes but data_offsets [0, 8] span 8"},
      {"dtype not a string", safetensors_bytes(R"({"w":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", eight),
       "tensor \"w\": json: \"w.dtype\" is a number, expected a string"},
      {"negative shape", safetensors_bytes("{" + tensor("w", "F32", "[-2]", "[0,8]") + "}", eight),
       "tensor \"w\": shape has a negative entry -2"},
      {"fractional shape", safetensors_bytes("{" + tensor("w", "F32", "[2.5]", "[0,8]") + "}", eight),
       "\"w.shape[0]\" is 2.5, expected an integer"},
      {"shape not an array", safetensors_bytes("{" + tensor("w", "F32", "2", "[0,8]") + "}", eight),
       "\"w.shape\" is a number, expected an array"},
      {"element count overflow",
       safetensors_bytes("{" + tensor("w", "F32", "[4294967296,4294967296,4294967296]", "[0,8]") + "}", eight),
       "tensor \"w\": shape [4294967296, 4294967296]... has more elements than fit in 64 bits"},
      {"byte size overflow", safetensors_bytes("{" + tensor("w", "F64", "[4611686018427387904]", "[0,8]") + "}", eight),
       "has more bytes than fit in 64 bits"},
      {"size disagrees with offsets", safetensors_bytes("{" + tensor("w", "F32", "[3]", "[0,8]") + "}", eight),
       "tensor \"w\": shape [3] of F32 needs 12 bytes but data_offsets [0, 8] span 8"},
      {"offsets out of range", safetensors_bytes("{" + tensor("w", "F32", "[4]", "[0,16]") + "}", eight),
       "tensor \"w\": data_offsets [0, 16] are out of range: the data section holds 8 bytes"},
      {"offsets far out of range", safetensors_bytes("{" + tensor("w", "F32", "[1]", "[1e300,1e300]") + "}", eight),
       "\"w.data_offsets[0]\" is 1e+300, out of the range of a 64-bit integer"},
      {"negative offsets", safetensors_bytes("{" + tensor("w", "F32", "[0]", "[-4,-4]") + "}", eight),
       "data_offsets [-4, -4] are negative"},
      {"reversed offsets", safetensors_bytes("{" + tensor("w", "F32", "[2]", "[8,0]") + "}", eight),
       "tensor \"w\": data_offsets [8, 0] are reversed"},
      {"three offsets", safetensors_bytes("{" + tensor("w", "F32", "[2]", "[0,8,8]") + "}", eight),
       "data_offsets has 3 entries, expected 2"},
      {"missing offsets", safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2]}})", eight),
       "tensor \"w\": missing \"data_offsets\""},
      {"entry not an object", safetensors_bytes(R"({"w":[1,2]})", ""), "tensor \"w\": expected an object"},
      {"overlap",
       safetensors_bytes("{" + tensor("a", "F32", "[2]", "[0,8]") + "," + tensor("b", "F32", "[2]", "[4,12]") + "}",
                         eight + "\x02\x02\x02\x02"),
       "tensor \"b\" data_offsets [4, 12] overlap tensor \"a\""},
      {"same range twice",
       safetensors_bytes("{" + tensor("a", "F32", "[2]", "[0,8]") + "," + tensor("b", "I32", "[2]", "[0,8]") + "}",
                         eight),
       "overlap tensor \"a\""},
      {"gap between tensors",
       safetensors_bytes("{" + tensor("a", "F32", "[2]", "[0,8]") + "," + tensor("b", "F32", "[2]", "[12,20]") + "}",
                         eight + "...." + eight),
       "data bytes [8, 12) (file offset "},
      {"gap at the start", safetensors_bytes("{" + tensor("a", "F32", "[2]", "[8,16]") + "}", eight + eight),
       "data bytes [0, 8) (file offset 63) before tensor \"a\" belong to no tensor"},
      {"bytes after the last tensor", safetensors_bytes("{" + tensor("a", "F32", "[2]", "[0,8]") + "}", eight + "xyz"),
       "3 data bytes at file offset 70 after the last tensor belong to no tensor"},
      {"data but no tensors", safetensors_bytes("{}", "x"), "1 data bytes at file offset 10 after the last tensor"},
      {"duplicate names",
       safetensors_bytes("{" + tensor("a", "F32", "[2]", "[0,8]") + "," + tensor("a", "F32", "[2]", "[8,16]") + "}",
                         eight + eight),
       "header is not valid JSON at byte 62: duplicate key \"a\""},
      {"metadata value not a string", safetensors_bytes(R"({"__metadata__":{"step":10}})", ""),
       "__metadata__ value of \"step\" is a number, expected a string"},
      {"metadata not an object", safetensors_bytes(R"({"__metadata__":"x"})", ""),
       "__metadata__ is a string, expected an object"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    write_bytes(path, c.bytes);
    CHECK_THROWS_WITH(load_safetensors(path), Contains(path + ": ") && Contains(c.message));
  }
  CHECK_THROWS_WITH(load_safetensors(dir.file("missing.safetensors")),
                    Contains("missing.safetensors: cannot open: No such file or directory"));
  CHECK_THROWS_WITH(load_safetensors(dir.path.string()), Contains("not a regular file"));
}

TEST_CASE("safetensors: every truncation and many byte flips are rejected, never a crash") {
  TempDir dir;
  const std::string path = dir.file("valid.safetensors");
  save_safetensors(path,
                   {{"w", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})},
                    {"n", Tensor::from_vector<int64_t>({9}, {})},
                    {"e", Tensor::zeros({0}, DType::Int32)}},
                   {{"config", "{}"}});
  const std::string valid = read_bytes(path);
  REQUIRE_NOTHROW(load_safetensors(path));

  const std::string cut = dir.file("cut.safetensors");
  for (size_t length = 0; length < valid.size(); ++length) {
    INFO("prefix of " << length << " of " << valid.size() << " bytes");
    write_bytes(cut, valid.substr(0, length));
    CHECK_THROWS_AS(load_safetensors(cut), Error);
  }
  write_bytes(cut, valid + '\0');
  CHECK_THROWS_WITH(load_safetensors(cut), Contains("after the last tensor belong to no tensor"));

  // A flipped byte in the length or the header either still reads as a valid
  // file or is an hkt::Error; nothing else escapes and nothing crashes.
  const size_t header_end = 8 + static_cast<unsigned char>(valid[0]) + 256 * static_cast<unsigned char>(valid[1]);
  int rejected = 0;
  for (size_t i = 0; i < header_end; ++i)
    for (int value : std::initializer_list<int>{0x00, 0x01, 0x7F, 0xFF, '0', '9', '-', '"', ',', '[', ']', '{', '}'}) {
      std::string mutated = valid;
      mutated[i] = static_cast<char>(value);
      write_bytes(cut, mutated);
      try {
        load_safetensors(cut);
      } catch (const Error&) {
        ++rejected;
      }
    }
  CHECK(rejected > 0);
}

TEST_CASE("safetensors: saving goes through a temporary file renamed into place") {
  TempDir dir;
  const std::string path = dir.file("checkpoint.safetensors");
  NamedTensors tensors = {{"w", Tensor::ones({3})}};
  write_bytes(path + ".tmp", "stale bytes from a crashed save");
  save_safetensors(path, tensors, {{"step", "1"}});
  CHECK(fs::exists(path));
  CHECK_FALSE(fs::exists(path + ".tmp"));
  CHECK(fs::directory_iterator(dir.path) != fs::directory_iterator());
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
  CHECK(load_safetensors(path).metadata.at("step") == "1");

  // A save that fails leaves the previous file as it was and no temporary file.
  const std::string before = read_bytes(path);
  CHECK_THROWS_WITH(save_safetensors(path, {{"a", Tensor::ones({1})}, {"a", Tensor::ones({1})}}),
                    Contains("duplicate tensor name \"a\""));
  CHECK_THROWS_WITH(save_safetensors(path, {{"__metadata__", Tensor::ones({1})}}), Contains("is reserved"));
  CHECK_THROWS_WITH(save_safetensors(path, {{"u", Tensor()}}), Contains("tensor \"u\" is undefined"));
  CHECK(read_bytes(path) == before);
  CHECK_FALSE(fs::exists(path + ".tmp"));

  // A folder at the target is refused before anything is written (io::AtomicFile
  // replaces regular files only), and no temporary file is left.
  const std::string folder = dir.file("folder");
  fs::create_directories(folder + "/inside");
  CHECK_THROWS_WITH(save_safetensors(folder, tensors), Contains(folder + ": a folder, not a regular file"));
  CHECK_FALSE(fs::exists(folder + ".tmp"));

  // Missing folders are created, as for every file a tool writes.
  save_safetensors(dir.file("no/such/dir/x.safetensors"), tensors);
  CHECK(load_safetensors(dir.file("no/such/dir/x.safetensors")).tensors.size() == tensors.size());
}

TEST_CASE("safetensors: F16 and BF16 tensors load as float32, every special value included") {
  TempDir dir;
  const std::string path = dir.file("half.safetensors");
  // F16: 1, -2, 65504 (largest), 2^-24 (smallest subnormal), -0, inf, NaN, 0.333251953125.
  const std::vector<uint16_t> f16 = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x8000, 0x7C00, 0x7E00, 0x3555};
  // BF16: 1, -2, 3.140625, 1e38-ish (0x7E96), -inf.
  const std::vector<uint16_t> bf16 = {0x3F80, 0xC000, 0x4049, 0x7E96, 0xFF80, 0x0000};
  std::string data(reinterpret_cast<const char*>(f16.data()), f16.size() * 2);
  data += std::string(reinterpret_cast<const char*>(bf16.data()), bf16.size() * 2);
  const std::string header = R"({"h":{"dtype":"F16","shape":[8],"data_offsets":[0,16]},)"
                             R"("b":{"dtype":"BF16","shape":[2,3],"data_offsets":[16,28]}})";
  write_bytes(path, safetensors_bytes(header + std::string((8 - header.size() % 8) % 8, ' '), data));
  const SafetensorsFile file = load_safetensors(path);
  REQUIRE(file.tensors.size() == 2);
  const Tensor& h = file.tensors[0].second;
  CHECK(h.dtype() == DType::Float32);
  const std::vector<float> hv = h.to_vector<float>();
  CHECK(hv[0] == 1.0f);
  CHECK(hv[1] == -2.0f);
  CHECK(hv[2] == 65504.0f);
  CHECK(hv[3] == std::ldexp(1.0f, -24));
  CHECK((hv[4] == 0.0f && std::signbit(hv[4])));
  CHECK(std::isinf(hv[5]));
  CHECK(std::isnan(hv[6]));
  CHECK(hv[7] == 0.333251953125f);
  const Tensor& b = file.tensors[1].second;
  CHECK(b.shape() == Shape{2, 3});
  const std::vector<float> bv = b.to_vector<float>();
  CHECK(bv[0] == 1.0f);
  CHECK(bv[1] == -2.0f);
  CHECK(bv[2] == 3.140625f);
  CHECK(bv[3] == std::bit_cast<float>(uint32_t{0x7E960000}));
  CHECK((std::isinf(bv[4]) && bv[4] < 0));
  CHECK(bv[5] == 0.0f);
}
