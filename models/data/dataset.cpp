#include "models/data/dataset.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hkt::data {

void validate(const Dataset& data, const std::string& who) {
  check(data.count >= 0 && data.seq_len >= 1 && data.vocab >= 1 && data.classes >= 1, who, ": count ", data.count,
        ", seq_len ", data.seq_len, ", vocab ", data.vocab, ", classes ", data.classes,
        ": expected count >= 0 and seq_len, vocab, classes >= 1");
  check(data.pad_id >= 0 && data.pad_id < data.vocab, who, ": pad_id ", data.pad_id, " outside [0, ", data.vocab, ")");
  const auto count = static_cast<size_t>(data.count);
  check(data.tokens.size() == count * static_cast<size_t>(data.seq_len) && data.lengths.size() == count &&
            data.labels.size() == count,
        who, ": ", data.tokens.size(), " tokens, ", data.lengths.size(), " lengths, ", data.labels.size(),
        " labels for ", data.count, " examples of length ", data.seq_len);
  for (size_t i = 0; i < count; ++i) {
    check(data.lengths[i] >= 1 && data.lengths[i] <= data.seq_len, who, ": example ", i, " has length ",
          data.lengths[i], " outside [1, ", data.seq_len, "]");
    check(data.labels[i] >= 0 && data.labels[i] < data.classes, who, ": example ", i, " has label ", data.labels[i],
          " outside [0, ", data.classes, ")");
  }
  for (size_t i = 0; i < data.tokens.size(); ++i)
    check(data.tokens[i] >= 0 && data.tokens[i] < data.vocab, who, ": example ",
          i / static_cast<size_t>(data.seq_len), " has token ", data.tokens[i], " outside [0, ", data.vocab, ")");
}

Batch make_batch(const Dataset& data, const std::vector<int64_t>& indices) {
  const auto T = static_cast<size_t>(data.seq_len);
  check(data.seq_len >= 1 && data.tokens.size() == static_cast<size_t>(data.count) * T &&
            data.lengths.size() == static_cast<size_t>(data.count) &&
            data.labels.size() == static_cast<size_t>(data.count),
        "make_batch: dataset of ", data.count, " examples of length ", data.seq_len, " holds ", data.tokens.size(),
        " tokens, ", data.lengths.size(), " lengths, ", data.labels.size(), " labels");
  check(!indices.empty(), "make_batch: no indices");
  const size_t B = indices.size();
  std::vector<int64_t> tokens(B * T), lengths(B), labels(B);
  for (size_t b = 0; b < B; ++b) {
    const int64_t index = indices[b];
    check(index >= 0 && index < data.count, "make_batch: index ", index, " (position ", b, ") outside [0, ",
          data.count, ")");
    const auto row = static_cast<size_t>(index);
    for (size_t t = 0; t < T; ++t) tokens[b * T + t] = data.tokens[row * T + t];
    lengths[b] = data.lengths[row];
    labels[b] = data.labels[row];
  }
  const auto batch = static_cast<int64_t>(B);
  return {Tensor::from_vector(tokens, {batch, data.seq_len}), Tensor::from_vector(lengths, {batch}),
          Tensor::from_vector(labels, {batch})};
}

std::pair<Dataset, Dataset> split_off(const Dataset& data, int64_t count) {
  check(count >= 0 && count <= data.count, "split_off: cannot take ", count, " of ", data.count, " examples");
  check(data.tokens.size() == static_cast<size_t>(data.count * data.seq_len) &&
            data.lengths.size() == static_cast<size_t>(data.count) &&
            data.labels.size() == static_cast<size_t>(data.count),
        "split_off: dataset of ", data.count, " examples of length ", data.seq_len, " holds ", data.tokens.size(),
        " tokens, ", data.lengths.size(), " lengths, ", data.labels.size(), " labels");
  Dataset first, second;
  for (Dataset* part : {&first, &second}) {
    part->seq_len = data.seq_len;
    part->vocab = data.vocab;
    part->classes = data.classes;
    part->pad_id = data.pad_id;
  }
  const int64_t keep = data.count - count;
  const auto cut = static_cast<std::ptrdiff_t>(keep), token_cut = static_cast<std::ptrdiff_t>(keep * data.seq_len);
  first.count = keep;
  second.count = count;
  first.tokens.assign(data.tokens.begin(), data.tokens.begin() + token_cut);
  second.tokens.assign(data.tokens.begin() + token_cut, data.tokens.end());
  first.lengths.assign(data.lengths.begin(), data.lengths.begin() + cut);
  second.lengths.assign(data.lengths.begin() + cut, data.lengths.end());
  first.labels.assign(data.labels.begin(), data.labels.begin() + cut);
  second.labels.assign(data.labels.begin() + cut, data.labels.end());
  return {std::move(first), std::move(second)};
}

std::string read_file_bytes(const std::string& path, const std::string& who, uint64_t max_bytes) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) fail(who, ": ", path, ": no such file");
  const uintmax_t size = std::filesystem::file_size(path, error);
  if (error) fail(who, ": ", path, ": cannot read its size (", error.message(), ")");
  check(size <= max_bytes, who, ": ", path, ": ", size, " bytes, more than the limit of ", max_bytes);
  std::ifstream in(path, std::ios::binary);
  check(in.good(), who, ": ", path, ": cannot open");
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  check(static_cast<uintmax_t>(in.gcount()) == size, who, ": ", path, ": read ", in.gcount(), " of ", size, " bytes");
  return bytes;
}

// Temporary file in the same folder (rename is atomic only within one file
// system), fsync before the rename so the new name never points at unwritten
// blocks after a power loss, fsync of the folder so the rename itself lasts.
void write_file_atomic(const std::string& path, const std::string& content, const std::string& who) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  check(fd >= 0, who, ": cannot create ", temporary, " (", std::strerror(errno), ")");
  const char* bytes = content.data();
  size_t left = content.size();
  bool ok = true;
  while (ok && left > 0) {
    const ssize_t written = ::write(fd, bytes, left);
    if (written < 0 && errno == EINTR) continue;
    ok = written > 0;
    if (ok) {
      bytes += written;
      left -= static_cast<size_t>(written);
    }
  }
  ok = ok && ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  if (!ok) {
    std::remove(temporary.c_str());
    fail(who, ": cannot write ", temporary, " (", std::strerror(errno), ")");
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::remove(temporary.c_str());
    fail(who, ": cannot rename ", temporary, " to ", path, " (", error.message(), ")");
  }
  const std::string folder = std::filesystem::path(path).parent_path().string();
  const int directory = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory >= 0) {  // best effort: some file systems refuse to sync a folder
    ::fsync(directory);
    ::close(directory);
  }
}

}  // namespace hkt::data
