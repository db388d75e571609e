#pragma once
// Checkpoints and tensor dumps in the Hugging Face safetensors format (SPEC
// section 6): an 8-byte little-endian header length N, N bytes of JSON header
//   {"__metadata__": {"key": "value"},
//    "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
// padded with spaces to a multiple of 8, then the raw little-endian data, the
// offsets counted from the start of the data section. Dtypes F32, F64, I32,
// I64; F16 and BF16 load too (converted to F32: the engine computes in
// float32), as PyTorch users often save weights in them.
#include <map>
#include <string>

#include "engine/tensor.h"

namespace hkt {

// Writes the tensors (copied to the host) in the order given, with no gaps,
// to path + ".tmp", fsyncs it and renames it over path, so a crash never
// leaves a half-written file at path. Names must be unique and not "__metadata__".
// With `checksum`, __metadata__ also gets "checksum": "crc32:XXXXXXXX" (see
// verify_safetensors_checksum); the file stays a plain safetensors file.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {}, bool checksum = false);

struct SafetensorsFile {
  NamedTensors tensors;  // CPU tensors in their stored dtype (F16, BF16: float32), in data-offset order
  std::map<std::string, std::string> metadata;
};

// Reads and validates a whole file, as the reference library does: header
// length within the file and at most 100 MB, a JSON object header, known
// dtypes, shapes whose byte size matches their offsets, and tensors that tile
// the data section exactly (no gaps, no overlaps, nothing left over). Every
// error names the file and the tensor or byte offset at fault.
SafetensorsFile load_safetensors(const std::string& path);

constexpr uint64_t kSafetensorsMaxHeader = 100'000'000;

// The checksum save_safetensors(..., checksum = true) writes: zlib's CRC-32 of
// the whole file as written, with the 8 hex digits of the value itself read as
// '0', so a change to any byte (length, header or data) is caught. Absent: the
// file has no checksum field (written without one). Throws "<who>: checksum
// mismatch (corrupt file) ..." when the stored and computed values differ or
// the stored one is not 8 hex digits. The field is looked for in the first
// 64 KiB or the claimed header, whichever is longer, and __metadata__ is
// written first, so a damaged length prefix cannot hide it.
enum class ChecksumStatus { Verified, Absent };
ChecksumStatus verify_safetensors_checksum(const std::string& path, const std::string& who);
inline constexpr const char* kSafetensorsChecksumKey = "checksum";

}  // namespace hkt
