#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <set>

#include <zlib.h>

#include "io/files.h"
#include "io/json.h"

namespace hkt {
namespace {

// The data section is the host's memory image of each tensor.
static_assert(std::endian::native == std::endian::little, "safetensors: data is little-endian, as is this host");

const char* dtype_code(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "F32";
    case DType::Float64: return "F64";
    case DType::Int32: return "I32";
    case DType::Int64: return "I64";
  }
  return "?";
}

bool parse_dtype_code(const std::string& code, DType& dtype) {
  for (DType candidate : {DType::Float32, DType::Float64, DType::Int32, DType::Int64})
    if (code == dtype_code(candidate)) {
      dtype = candidate;
      return true;
    }
  return false;
}

std::string errno_text() { return std::strerror(errno); }

// The 16-bit floats PyTorch users save in; loaded as float32.
enum class HalfFormat { None, F16, BF16 };

float bf16_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

// IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits; exact in float32.
float f16_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16, exponent = (bits >> 10) & 0x1f,
                 mantissa = bits & 0x3ff;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
  const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // zero or subnormal
  return sign ? -magnitude : magnitude;
}

// A file descriptor closed on scope exit.
struct FileDescriptor {
  int fd = -1;
  explicit FileDescriptor(int fd_) : fd(fd_) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

void read_all_at(int fd, void* data, size_t size, uint64_t offset, const std::string& path) {
  char* bytes = static_cast<char*>(data);
  while (size > 0) {
    ssize_t got = ::pread(fd, bytes, size, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(path, ": read failed at byte ", offset, ": ", errno_text());
    if (got == 0) fail(path, ": file ended at byte ", offset, " while reading");
    bytes += got;
    offset += static_cast<uint64_t>(got);
    size -= static_cast<size_t>(got);
  }
}

std::string build_header(const NamedTensors& tensors, const std::vector<Tensor>& host,
                         const std::map<std::string, std::string>& metadata) {
  Json::Object members;
  if (!metadata.empty()) {
    Json::Object strings;
    for (const auto& [key, value] : metadata) strings.emplace_back(key, Json(value));
    members.emplace_back("__metadata__", Json(std::move(strings)));
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    Json shape = Json::array();
    for (int64_t extent : host[i].shape()) shape.push_back(extent);
    const uint64_t end = offset + host[i].nbytes();
    members.emplace_back(tensors[i].first, Json::object({{"dtype", dtype_code(host[i].dtype())},
                                                          {"shape", std::move(shape)},
                                                          {"data_offsets", Json::array({offset, end})}}));
    offset = end;
  }
  // Padded with spaces to a multiple of 8 bytes, as the reference library writes it.
  std::string text = to_json(Json(std::move(members)));
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

// The field as to_json writes it, up to its 8 hex digits.
constexpr std::string_view kChecksumField = "\"checksum\":\"crc32:";
constexpr size_t kChecksumDigits = 8;

uint32_t crc32_update(uint32_t crc, const void* data, size_t size) {
  const auto* bytes = static_cast<const Bytef*>(data);
  while (size > 0) {  // zlib counts in 32-bit uInt
    const size_t chunk = std::min<size_t>(size, size_t{1} << 30);
    crc = static_cast<uint32_t>(::crc32(crc, bytes, static_cast<uInt>(chunk)));
    bytes += chunk;
    size -= chunk;
  }
  return crc;
}

std::string hex8(uint32_t value) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", value);
  return text;
}

// Fills the zeroed digits of the checksum field in `header` with the CRC-32 of
// the file as it will be written (length bytes, header, tensor data).
void fill_checksum(std::string& header, const unsigned char (&length_bytes)[8], const std::vector<Tensor>& host) {
  const size_t field = header.find(kChecksumField);
  check(field != std::string::npos, "save_safetensors: internal error: no checksum field in the header");
  uint32_t crc = crc32_update(0, length_bytes, 8);
  crc = crc32_update(crc, header.data(), header.size());
  for (const Tensor& tensor : host)
    if (tensor.nbytes() > 0) crc = crc32_update(crc, tensor.raw_data(), tensor.nbytes());
  header.replace(field + kChecksumField.size(), kChecksumDigits, hex8(crc));
}

}  // namespace

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata_in, bool checksum) {
  std::map<std::string, std::string> metadata = metadata_in;
  if (checksum) {
    check(metadata.count(kSafetensorsChecksumKey) == 0, path, ": metadata key \"",
          kSafetensorsChecksumKey, "\" is reserved for the checksum");
    metadata[kSafetensorsChecksumKey] = "crc32:" + std::string(kChecksumDigits, '0');
  }
  std::set<std::string> names;
  std::vector<Tensor> host;
  for (const auto& [name, tensor] : tensors) {
    check(name != "__metadata__", path, ": \"__metadata__\" is reserved, not a tensor name");
    check(names.insert(name).second, path, ": duplicate tensor name \"", name, "\"");
    check(tensor.defined(), path, ": tensor \"", name, "\" is undefined");
    host.push_back(tensor.detach().to(Device::cpu()));
  }
  std::string header = build_header(tensors, host, metadata);
  unsigned char length_bytes[8];
  for (int i = 0; i < 8; ++i) length_bytes[i] = static_cast<unsigned char>(static_cast<uint64_t>(header.size()) >> (8 * i));
  if (checksum) fill_checksum(header, length_bytes, host);

  // A fixed temporary name: a stale one from a crashed save is overwritten.
  io::AtomicFile file(path, "", path + ".tmp");
  file.write(length_bytes, sizeof length_bytes);
  file.write(header);
  for (const Tensor& tensor : host)
    if (tensor.nbytes() > 0) file.write(tensor.raw_data(), tensor.nbytes());
  file.commit();
}

namespace {

struct TensorEntry {
  std::string name;
  DType dtype = DType::Float32;  // in memory; F16 and BF16 (`half`) become Float32
  HalfFormat half = HalfFormat::None;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

// One header member; errors say what is wrong, the caller adds file and name.
TensorEntry parse_entry(const std::string& name, const Json& info, uint64_t data_length) {
  TensorEntry entry;
  entry.name = name;
  check(info.is_object(), "expected an object with dtype, shape and data_offsets, got ", info.type_name());
  for (const char* key : {"dtype", "shape", "data_offsets"}) check(info.contains(key), "missing \"", key, "\"");

  const std::string& code = info.at("dtype").as_string();
  if (code == "F16" || code == "BF16") entry.half = code == "F16" ? HalfFormat::F16 : HalfFormat::BF16;
  else
    check(parse_dtype_code(code, entry.dtype), "unsupported dtype \"", code,
          "\" (expected F32, F64, F16, BF16, I32 or I64)");
  const int64_t element_bytes = entry.half != HalfFormat::None ? 2 : static_cast<int64_t>(dtype_size(entry.dtype));

  int64_t elements = 1;
  for (const Json& extent : info.at("shape").as_array()) {
    const int64_t value = extent.as_int();
    check(value >= 0, "shape has a negative entry ", value);
    entry.shape.push_back(value);
    check(!__builtin_mul_overflow(elements, value, &elements), "shape ", entry.shape,
          "... has more elements than fit in 64 bits");
  }
  int64_t bytes = 0;
  check(!__builtin_mul_overflow(elements, element_bytes, &bytes), "shape ",
        entry.shape, " of ", code, " has more bytes than fit in 64 bits");

  const Json::Array& offsets = info.at("data_offsets").as_array();
  check(offsets.size() == 2, "data_offsets has ", offsets.size(), " entries, expected 2 (begin, end)");
  const int64_t begin = offsets[0].as_int(), end = offsets[1].as_int();
  check(begin >= 0 && end >= 0, "data_offsets [", begin, ", ", end, "] are negative");
  check(begin <= end, "data_offsets [", begin, ", ", end, "] are reversed");
  check(static_cast<uint64_t>(end) <= data_length, "data_offsets [", begin, ", ", end,
        "] are out of range: the data section holds ", data_length, " bytes");
  check(end - begin == bytes, "shape ", entry.shape, " of ", code, " needs ", bytes,
        " bytes but data_offsets [", begin, ", ", end, "] span ", end - begin);
  entry.begin = static_cast<uint64_t>(begin);
  entry.end = static_cast<uint64_t>(end);
  return entry;
}

void parse_metadata(const std::string& path, const Json& value, std::map<std::string, std::string>& metadata) {
  if (value.is_null()) return;  // the reference reads a null __metadata__ as none
  check(value.is_object(), path, ": __metadata__ is ", value.type_name(), ", expected an object");
  for (const auto& [key, item] : value.as_object()) {
    check(item.is_string(), path, ": __metadata__ value of \"", key, "\" is ", item.type_name(),
          ", expected a string");
    metadata[key] = item.as_string();
  }
}

}  // namespace

ChecksumStatus verify_safetensors_checksum(const std::string& path, const std::string& who) {
  FileDescriptor file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));  // a FIFO: refused below, not waited on
  if (file.fd < 0) fail(who, ": cannot open: ", errno_text());
  struct stat status {};
  if (::fstat(file.fd, &status) != 0) fail(who, ": cannot stat: ", errno_text());
  check(S_ISREG(status.st_mode), who, ": not a regular file");
  const uint64_t file_size = static_cast<uint64_t>(status.st_size);

  uint64_t claimed_header = 0;
  if (file_size >= 8) {
    unsigned char length_bytes[8];
    read_all_at(file.fd, length_bytes, 8, 0, path);
    for (int i = 7; i >= 0; --i) claimed_header = (claimed_header << 8) | length_bytes[i];
  }
  const uint64_t region = std::min(file_size, std::max<uint64_t>(uint64_t{1} << 16,
                                                                 8 + std::min(claimed_header, kSafetensorsMaxHeader)));
  std::string head(static_cast<size_t>(region), '\0');
  if (region > 0) read_all_at(file.fd, head.data(), head.size(), 0, path);
  const size_t field = head.find(kChecksumField);
  if (field == std::string::npos) return ChecksumStatus::Absent;
  const size_t digits = field + kChecksumField.size();
  check(digits + kChecksumDigits <= head.size(), who, ": checksum mismatch (corrupt file): the checksum at byte ",
        digits, " is cut off by the end of the file");
  const std::string stored = head.substr(digits, kChecksumDigits);
  check(stored.find_first_not_of("0123456789abcdef") == std::string::npos, who,
        ": checksum mismatch (corrupt file): the stored checksum '", stored, "' at byte ", digits,
        " is not 8 hex digits");
  head.replace(digits, kChecksumDigits, kChecksumDigits, '0');

  uint32_t crc = crc32_update(0, head.data(), head.size());
  std::string chunk;
  for (uint64_t offset = region; offset < file_size;) {
    chunk.resize(static_cast<size_t>(std::min<uint64_t>(file_size - offset, uint64_t{1} << 20)));
    read_all_at(file.fd, chunk.data(), chunk.size(), offset, path);
    crc = crc32_update(crc, chunk.data(), chunk.size());
    offset += chunk.size();
  }
  check(hex8(crc) == stored, who, ": checksum mismatch (corrupt file): stored crc32 ", stored, ", computed ",
        hex8(crc), " over ", file_size, " bytes");
  return ChecksumStatus::Verified;
}

SafetensorsFile load_safetensors(const std::string& path) {
  FileDescriptor file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));  // a FIFO: refused below, not waited on
  if (file.fd < 0) fail(path, ": cannot open: ", errno_text());
  struct stat status {};
  if (::fstat(file.fd, &status) != 0) fail(path, ": cannot stat: ", errno_text());
  check(S_ISREG(status.st_mode), path, ": not a regular file");
  const uint64_t file_size = static_cast<uint64_t>(status.st_size);

  check(file_size >= 8, path, ": file is ", file_size,
        " bytes, shorter than the 8-byte header length");
  unsigned char length_bytes[8];
  read_all_at(file.fd, length_bytes, 8, 0, path);
  uint64_t header_length = 0;
  for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | length_bytes[i];
  check(header_length <= kSafetensorsMaxHeader, path, ": header length ", header_length,
        " at byte 0 is larger than the limit of ", kSafetensorsMaxHeader, " bytes");
  check(header_length <= file_size - 8, path, ": header length ", header_length,
        " at byte 0 runs past the end of the file (", file_size, " bytes)");

  std::string header_text(header_length, '\0');
  read_all_at(file.fd, header_text.data(), header_text.size(), 8, path);
  Json header;
  try {
    header = parse_json(header_text);
  } catch (const JsonParseError& error) {
    fail(path, ": header is not valid JSON at byte ", 8 + error.offset, ": ", error.reason);
  }
  check(header.is_object(), path, ": header at byte 8 is ", header.type_name(),
        ", expected an object");

  const uint64_t data_start = 8 + header_length, data_length = file_size - data_start;
  SafetensorsFile result;
  std::vector<TensorEntry> entries;
  for (const auto& [name, info] : header.as_object()) {
    if (name == "__metadata__") {
      parse_metadata(path, info, result.metadata);
      continue;
    }
    try {
      entries.push_back(parse_entry(name, info, data_length));
    } catch (const Error& error) {
      fail(path, ": tensor \"", name, "\": ", error.what());
    }
  }

  // The tensors must tile the data section: sorted by offset, each begins
  // where the previous one ended, and the last ends at the end of the file.
  std::stable_sort(entries.begin(), entries.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const std::string* previous = nullptr;
  for (const TensorEntry& entry : entries) {
    check(entry.begin >= covered, path, ": tensor \"", entry.name, "\" data_offsets [",
          entry.begin, ", ", entry.end, "] overlap tensor \"", previous ? *previous : "", "\"");
    check(entry.begin == covered, path, ": data bytes [", covered, ", ", entry.begin,
          ") (file offset ", data_start + covered, ") before tensor \"", entry.name, "\" belong to no tensor");
    covered = entry.end;
    previous = &entry.name;
  }
  check(covered == data_length, path, ": ", data_length - covered,
        " data bytes at file offset ", data_start + covered, " after the last tensor belong to no tensor");

  for (const TensorEntry& entry : entries) {
    Tensor tensor = Tensor::empty(entry.shape, entry.dtype);
    if (entry.half != HalfFormat::None) {
      std::vector<uint16_t> bits(static_cast<size_t>(tensor.numel()));
      if (!bits.empty()) read_all_at(file.fd, bits.data(), bits.size() * 2, data_start + entry.begin, path);
      float* values = static_cast<float*>(tensor.raw_data());
      for (size_t i = 0; i < bits.size(); ++i)
        values[i] = entry.half == HalfFormat::F16 ? f16_to_float(bits[i]) : bf16_to_float(bits[i]);
    } else if (tensor.nbytes() > 0) {
      read_all_at(file.fd, tensor.raw_data(), tensor.nbytes(), data_start + entry.begin, path);
    }
    result.tensors.emplace_back(entry.name, std::move(tensor));
  }
  return result;
}

}  // namespace hkt
