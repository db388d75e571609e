#include "data/imdb.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace hkt::data {
namespace {

// The .txt files of one class folder, sorted by name.
std::vector<std::filesystem::path> review_files(const std::filesystem::path& folder) {
  check(std::filesystem::is_directory(folder), folder.string(), ": no such folder");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    if (entry.is_regular_file() && entry.path().extension() == ".txt") files.push_back(entry.path());
  check(!files.empty(), folder.string(), ": no .txt files");
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

Dataset load_imdb(const std::string& directory, bool train, int64_t seq_len) {
  check(seq_len >= 1 && seq_len <= (int64_t{1} << 24), "seq_len ", seq_len, " outside [1, 2^24]");
  const auto split = std::filesystem::path(directory) / (train ? "train" : "test");
  check(std::filesystem::is_directory(split), split.string(), ": no such folder");
  const std::vector<std::filesystem::path> classes[2] = {review_files(split / "neg"), review_files(split / "pos")};
  const auto count = static_cast<int64_t>(classes[0].size() + classes[1].size());
  check(count * seq_len <= kMaxDatasetTokens, count, " reviews of ", seq_len,
        " tokens would need more than the limit of ", kMaxDatasetTokens, " tokens");

  Dataset data;
  data.count = count;
  data.seq_len = seq_len;
  data.vocab = kImdbVocab;
  data.classes = 2;
  data.pad_id = 0;
  data.tokens.assign(static_cast<size_t>(count * seq_len), data.pad_id);
  std::string bytes(static_cast<size_t>(seq_len), '\0');
  size_t row = 0;
  for (int32_t label = 0; label < 2; ++label) {
    for (const std::filesystem::path& path : classes[label]) {
      std::ifstream in(path, std::ios::binary);
      check(in.good(), path.string(), ": cannot open");
      in.read(bytes.data(), static_cast<std::streamsize>(seq_len));
      const auto length = static_cast<size_t>(in.gcount());
      check(length > 0, path.string(), ": empty review");
      int32_t* tokens = data.tokens.data() + row * static_cast<size_t>(seq_len);
      for (size_t t = 0; t < length; ++t) tokens[t] = static_cast<int32_t>(static_cast<uint8_t>(bytes[t])) + 1;
      data.lengths.push_back(static_cast<int32_t>(length));
      data.labels.push_back(label);
      ++row;
    }
  }
  return data;
}

}  // namespace hkt::data
