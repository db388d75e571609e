#pragma once
// IDX files (the MNIST format) and Fashion-MNIST (SPEC section 6). An IDX file
// is a 4-byte magic 00 00 <type> <rank>, <rank> big-endian uint32 sizes, then
// the values; only unsigned bytes (type 0x08) occur here: 0x00000803 images
// [n, 28, 28], 0x00000801 labels [n]. Files may be gzip-compressed (.gz, as
// Debian's dataset-fashion-mnist package ships them); byte offsets in the
// messages of a compressed file count in its decompressed data.
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace hkt::data {

// The whole file, inflated with zlib when it starts with the gzip magic
// (1f 8b). At most max_bytes of output; a truncated or corrupt stream is an
// error naming the file and the compressed byte offset.
std::string read_maybe_gzipped(const std::string& path, const std::string& who,
                               uint64_t max_bytes = uint64_t{1} << 32);

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> values;  // row-major, prod(dims) bytes
};

// Checks the magic (type 0x08, rank 1-4) and that the file holds exactly the
// bytes its header promises; a header promising more than max_values values
// is refused from the header alone, before a gzipped file is inflated.
IdxArray read_idx(const std::string& path, uint64_t max_values = uint64_t{1} << 32);

// One split of Fashion-MNIST from `directory`, which holds
// {train,t10k}-{images-idx3,labels-idx1}-ubyte, plain or with .gz. Each image
// is a sequence of 784 pixel tokens in raster order (token = pixel value,
// vocab 256, classes 10, every length 784, so pad_id 0 never pads).
Dataset load_fashion_mnist(const std::string& directory, bool train);

// The folder of Debian's dataset-fashion-mnist package
// (/usr/share/datasets/fashion-mnist), or $HKT_FASHION_MNIST_DIR when set.
// Throws, with the install command, where neither holds the files.
std::string default_fashion_mnist_directory();

}  // namespace hkt::data
