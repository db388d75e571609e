#pragma once
// Checkpoints and tensor dumps in the Hugging Face safetensors format (SPEC
// section 6): an 8-byte little-endian header length N, N bytes of JSON header
//   {"__metadata__": {"key": "value"},
//    "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
// padded with spaces to a multiple of 8, then the raw little-endian data, the
// offsets counted from the start of the data section. Dtypes F32, F64, I32, I64.
#include <map>
#include <string>

#include "engine/module.h"

namespace hkt {

// Writes the tensors (copied to the host) in the order given, with no gaps,
// to path + ".tmp", fsyncs it and renames it over path, so a crash never
// leaves a half-written file at path. Names must be unique and not "__metadata__".
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

struct SafetensorsFile {
  NamedTensors tensors;  // CPU tensors in their stored dtype, in data-offset order
  std::map<std::string, std::string> metadata;
};

// Reads and validates a whole file, as the reference library does: header
// length within the file and at most 100 MB, a JSON object header, known
// dtypes, shapes whose byte size matches their offsets, and tensors that tile
// the data section exactly (no gaps, no overlaps, nothing left over). Every
// error names the file and the tensor or byte offset at fault.
SafetensorsFile load_safetensors(const std::string& path);

constexpr uint64_t kSafetensorsMaxHeader = 100'000'000;

}  // namespace hkt
