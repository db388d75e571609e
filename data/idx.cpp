#include "data/idx.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <zlib.h>

#include "io/files.h"

namespace hkt::data {
namespace {

bool has_gzip_magic(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x1f && static_cast<uint8_t>(bytes[1]) == 0x8b;
}

// Inflates every gzip member of `compressed` (gzip allows several, concatenated).
// More than max_bytes is an error, or with prefix_only the first max_bytes
// (fewer if the data is shorter) are returned without inflating the rest.
std::string gunzip(const std::string& compressed, const std::string& who, uint64_t max_bytes, bool prefix_only = false) {
  z_stream stream{};
  check(inflateInit2(&stream, 15 + 16) == Z_OK, who, ": zlib inflateInit2 failed");
  // The trailer's ISIZE (the last member's size mod 2^32) sizes the buffer for
  // the usual single-member file; one spare byte lets inflate reach the end
  // without a regrow. Deflate expands at most 1032:1, which bounds the hint.
  uint64_t hint = 4096;
  if (compressed.size() >= 18) {
    const auto* tail = reinterpret_cast<const uint8_t*>(compressed.data() + compressed.size() - 4);
    hint = (uint64_t{tail[3]} << 24 | uint64_t{tail[2]} << 16 | uint64_t{tail[1]} << 8 | tail[0]) + 1;
  }
  hint = std::clamp<uint64_t>(hint, 4096, std::max<uint64_t>(4096, 1032 * uint64_t{compressed.size()}));
  std::string out(static_cast<size_t>(std::min(max_bytes, hint)), '\0');
  size_t produced = 0, consumed = 0;
  auto error = [&](const auto&... parts) {
    inflateEnd(&stream);
    fail(who, ": ", parts...);
  };
  for (;;) {
    if (produced == out.size()) {
      if (out.size() >= max_bytes) {
        if (prefix_only) break;
        error("decompresses to more than ", max_bytes, " bytes");
      }
      out.resize(static_cast<size_t>(std::min<uint64_t>(max_bytes, 2 * uint64_t{out.size()})));
    }
    // zlib counts in 32-bit uInt: feed and drain at most 1 GiB at a time.
    const size_t in_chunk = std::min<size_t>(compressed.size() - consumed, size_t{1} << 30);
    const size_t out_chunk = std::min<size_t>(out.size() - produced, size_t{1} << 30);
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data() + consumed));
    stream.avail_in = static_cast<uInt>(in_chunk);
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    stream.avail_out = static_cast<uInt>(out_chunk);
    const int status = inflate(&stream, Z_NO_FLUSH);
    consumed += in_chunk - stream.avail_in;
    produced += out_chunk - stream.avail_out;
    if (status == Z_STREAM_END) {
      if (consumed == compressed.size()) break;
      if (compressed.size() - consumed >= 2 && static_cast<uint8_t>(compressed[consumed]) == 0x1f &&
          static_cast<uint8_t>(compressed[consumed + 1]) == 0x8b) {
        inflateReset(&stream);  // the next member
        continue;
      }
      error(compressed.size() - consumed, " bytes of trailing garbage after the gzip data at compressed byte offset ",
            consumed);
    }
    if (status == Z_DATA_ERROR || status == Z_NEED_DICT || status == Z_MEM_ERROR || status == Z_STREAM_ERROR)
      error("corrupt gzip data near compressed byte offset ", consumed, " (", stream.msg ? stream.msg : "zlib error",
            ")");
    if (consumed == compressed.size() && stream.avail_out != 0)
      error("gzip data truncated: the file ends at byte ", compressed.size(), " inside the compressed stream");
  }
  inflateEnd(&stream);
  out.resize(produced);
  return out;
}

uint32_t big_endian_u32(const std::string& bytes, size_t offset) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data() + offset);
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// The dims an IDX file's own header promises, or none when the header is
// too short or malformed (read_idx then reports what is wrong).
std::vector<int64_t> promised_dims(const std::string& head) {
  if (head.size() < 4) return {};
  const uint32_t magic = big_endian_u32(head, 0), rank = magic & 0xff;
  if ((magic >> 8) != 0x08 || rank < 1 || rank > 4 || head.size() < 4 + 4 * uint64_t{rank}) return {};
  std::vector<int64_t> dims;
  for (uint32_t axis = 0; axis < rank; ++axis) dims.push_back(big_endian_u32(head, 4 + 4 * axis));
  return dims;
}

// The size the header promises (header + data bytes), or the format's
// largest when malformed. Bounds what a gzipped file may inflate to, so a
// small gzip bomb is stopped at that size instead of at 4 GiB.
constexpr uint64_t kLargest = 4 + 4 * 4 + (uint64_t{1} << 32);
uint64_t promised_idx_size(const std::vector<int64_t>& dims) {
  if (dims.empty()) return kLargest;
  uint64_t elements = 1;
  for (int64_t extent : dims) {
    elements *= static_cast<uint64_t>(extent);
    if (elements > (uint64_t{1} << 32)) return kLargest;
  }
  return 4 + 4 * dims.size() + elements;
}

// `name` of the file in `directory`, plain or gzipped.
std::string find_file(const std::string& directory, const std::string& name) {
  const auto plain = std::filesystem::path(directory) / name;
  if (std::filesystem::exists(plain)) return plain.string();
  const auto gzipped = std::filesystem::path(directory) / (name + ".gz");
  if (std::filesystem::exists(gzipped)) return gzipped.string();
  fail("neither ", plain.string(), " nor ", gzipped.string(), " exists");
}

std::string shape_of(const std::vector<int64_t>& dims) { return shape_str(Shape(dims.begin(), dims.end())); }

}  // namespace

std::string read_maybe_gzipped(const std::string& path, const std::string& who, uint64_t max_bytes) {
  std::string bytes = io::read_file_bytes(path, who, max_bytes);
  if (!has_gzip_magic(bytes)) return bytes;
  return gunzip(bytes, who + ": " + path, max_bytes);
}

IdxArray read_idx(const std::string& path, uint64_t max_values) {
  std::string raw = io::read_file_bytes(path, "");
  const bool compressed = has_gzip_magic(raw);
  const std::string who = path + (compressed ? " (decompressed)" : "");
  // The header alone says how much data is coming: checked before inflating
  // (a small gzip file's header could promise a gigabyte the caller cannot use).
  const std::vector<int64_t> dims =
      promised_dims(compressed ? gunzip(raw, path, 20, /*prefix_only=*/true) : raw.substr(0, 20));
  const uint64_t promised = promised_idx_size(dims);
  if (compressed && promised != kLargest) {  // a plain file is already read, its size bounds it
    const uint64_t values = promised - 4 - 4 * dims.size();
    check(values <= max_values, who, ": dims ", shape_of(dims), " promise ", values, " values, more than the ",
          max_values, " expected here");
    // Deflate packs at most 1032 bytes into one: a small file cannot hold more.
    check(promised <= 1032 * static_cast<uint64_t>(raw.size()) + 1024, who, ": dims ",
          shape_of(dims), " promise ", promised, " bytes, more than a ", raw.size(),
          "-byte gzip file can hold (deflate packs 1032:1 at most)");
  }
  // One byte past the promised size lets the trailing-bytes check below name the excess.
  const std::string bytes = compressed ? gunzip(raw, path, promised + 1) : std::move(raw);
  const uint64_t size = bytes.size();
  check(size >= 4, who, ": ", size, " bytes, too short for the 4-byte magic");
  const uint32_t magic = big_endian_u32(bytes, 0);
  const uint32_t type = (magic >> 8) & 0xff, rank = magic & 0xff;
  check((magic >> 16) == 0 && type == 0x08 && rank >= 1 && rank <= 4, who, ": magic 0x", std::hex, magic, std::dec,
        " at byte offset 0: expected 0x000008<rank> (unsigned bytes, rank 1-4)");
  const uint64_t header = 4 + 4 * uint64_t{rank};
  check(size >= header, who, ": the header of rank ", rank, " needs ", header, " bytes but the file ends at byte ", size);
  IdxArray array;
  uint64_t elements = 1;
  for (uint32_t axis = 0; axis < rank; ++axis) {
    const uint32_t extent = big_endian_u32(bytes, 4 + 4 * axis);
    array.dims.push_back(extent);
    elements *= extent;  // < 2^64: the running product is checked to stay ≤ 2^32, each extent is < 2^32
    check(elements <= (uint64_t{1} << 32), who, ": dims ", shape_of(array.dims), "... promise more than 2^32 bytes");
  }
  check(size >= header + elements, who, ": truncated: dims ", shape_of(array.dims), " promise ", elements,
        " data bytes ending at byte offset ", header + elements, " but the file ends at byte offset ", size);
  check(size == header + elements, who, ": ", size - header - elements, " trailing bytes after byte offset ",
        header + elements, " (dims ", shape_of(array.dims), ")");
  array.values.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return array;
}

Dataset load_fashion_mnist(const std::string& directory, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  const std::string images_path = find_file(directory, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(directory, prefix + "-labels-idx1-ubyte");
  // The labels first: their count bounds what the images may promise.
  const IdxArray labels = read_idx(labels_path, static_cast<uint64_t>(kMaxDatasetTokens) / (28 * 28));
  const IdxArray images = read_idx(images_path, labels.values.size() * 28 * 28);
  check(images.dims.size() == 3 && images.dims[1] == 28 && images.dims[2] == 28 && images.dims[0] >= 1,
        images_path, ": dims ", shape_of(images.dims), ", expected [n, 28, 28] with n >= 1");
  check(labels.dims.size() == 1 && labels.dims[0] == images.dims[0], labels_path, ": dims ",
        shape_of(labels.dims), " but the images are ", shape_of(images.dims));
  check(static_cast<int64_t>(images.values.size()) <= kMaxDatasetTokens, images_path,
        ": ", images.values.size(), " pixels, more than the limit of ", kMaxDatasetTokens, " tokens");
  Dataset data;
  data.count = images.dims[0];
  data.seq_len = 28 * 28;
  data.vocab = 256;
  data.classes = 10;
  data.pad_id = 0;
  data.tokens.assign(images.values.begin(), images.values.end());
  data.lengths.assign(static_cast<size_t>(data.count), static_cast<int32_t>(data.seq_len));
  data.labels.resize(static_cast<size_t>(data.count));
  for (size_t i = 0; i < labels.values.size(); ++i) {
    check(labels.values[i] < 10, labels_path, ": label ", int{labels.values[i]},
          " at byte offset ", 8 + i, " (example ", i, ") outside 0-9");
    data.labels[i] = labels.values[i];
  }
  return data;
}

std::string default_fashion_mnist_directory() {
  std::vector<std::string> candidates;
  if (const char* directory = std::getenv("HKT_FASHION_MNIST_DIR"); directory && *directory)
    candidates.emplace_back(directory);
  candidates.emplace_back("/usr/share/datasets/fashion-mnist");
  for (const std::string& directory : candidates) {
    const auto base = std::filesystem::path(directory);
    if (std::filesystem::exists(base / "train-images-idx3-ubyte.gz") ||
        std::filesystem::exists(base / "train-images-idx3-ubyte"))
      return directory;
  }
  fail("default_fashion_mnist_directory: no Fashion-MNIST files in ", candidates.back(),
       " (install them with: apt-get install dataset-fashion-mnist, or set HKT_FASHION_MNIST_DIR)");
}

}  // namespace hkt::data
