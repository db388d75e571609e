#include "data/cifar.h"

#include <filesystem>

#include "io/files.h"

namespace hkt::data {
namespace {

// Appends the records of one file to `data` (whose seq_len says grey or colour).
void append_records(Dataset& data, const std::string& path, CifarPixels pixels) {
  const std::string who = path;
  const std::string bytes = io::read_file_bytes(path, "");
  const uint64_t size = bytes.size();
  check(size > 0, who, ": empty file");
  check(size % kCifarRecordBytes == 0, who, ": size ", size, " is not a multiple of the record size ",
        kCifarRecordBytes, " (a partial record starts at byte offset ", size / kCifarRecordBytes * kCifarRecordBytes,
        ")");
  const auto records = static_cast<size_t>(size / kCifarRecordBytes);
  const auto T = static_cast<size_t>(data.seq_len);
  check(static_cast<int64_t>(data.tokens.size() + records * T) <= kMaxDatasetTokens, who, ": ", records,
        " more records would need more than the limit of ", kMaxDatasetTokens, " tokens");
  data.tokens.reserve(data.tokens.size() + records * T);
  const auto* base = reinterpret_cast<const uint8_t*>(bytes.data());
  for (size_t r = 0; r < records; ++r) {
    const uint8_t* record = base + r * kCifarRecordBytes;
    check(record[0] <= 9, who, ": record ", r, " at byte offset ", r * kCifarRecordBytes, " has label ",
          int{record[0]}, " (expected 0-9)");
    const uint8_t* red = record + 1;
    const uint8_t* green = red + 1024;
    const uint8_t* blue = green + 1024;
    if (pixels == CifarPixels::Colour) {
      data.tokens.insert(data.tokens.end(), red, red + 3072);
    } else {
      for (size_t p = 0; p < 1024; ++p)
        data.tokens.push_back(static_cast<int32_t>((299 * red[p] + 587 * green[p] + 114 * blue[p] + 500) / 1000));
    }
    data.lengths.push_back(static_cast<int32_t>(T));
    data.labels.push_back(record[0]);
    ++data.count;
  }
}

Dataset empty_cifar(CifarPixels pixels) {
  Dataset data;
  data.seq_len = pixels == CifarPixels::Grey ? 1024 : 3072;
  data.vocab = 256;
  data.classes = 10;
  data.pad_id = 0;
  return data;
}

}  // namespace

Dataset read_cifar10_file(const std::string& path, CifarPixels pixels) {
  Dataset data = empty_cifar(pixels);
  append_records(data, path, pixels);
  return data;
}

Dataset load_cifar10(const std::string& directory, bool train, CifarPixels pixels) {
  std::filesystem::path folder(directory);
  if (!std::filesystem::exists(folder / "test_batch.bin") &&
      std::filesystem::exists(folder / "cifar-10-batches-bin" / "test_batch.bin"))
    folder /= "cifar-10-batches-bin";
  std::vector<std::string> names;
  if (train) {
    for (int i = 1; i <= 5; ++i) names.push_back("data_batch_" + std::to_string(i) + ".bin");
  } else {
    names.push_back("test_batch.bin");
  }
  Dataset data = empty_cifar(pixels);
  for (const std::string& name : names) {
    const auto path = folder / name;
    check(std::filesystem::is_regular_file(path), path.string(), ": no such file");
    append_records(data, path.string(), pixels);
  }
  return data;
}

}  // namespace hkt::data
