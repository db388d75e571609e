#include "distributed/communicator.h"

#include <algorithm>
#include <cstdlib>

#include "distributed/mpi_communicator.h"
#include "engine/dispatch.h"

namespace hkt::distributed {
namespace {

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "single"; }
  void all_reduce_sum(float*, int64_t) override {}
  void all_reduce_sum(double*, int64_t) override {}
  using Communicator::all_reduce_sum;
  void broadcast(void*, int64_t, int root) override {
    check(root == 0, "broadcast: root ", root, " in a single process");
  }
  void barrier() override {}
  void set_timeout(double seconds) override {
    check(seconds > 0, "communicator: the collective timeout must be positive, got ", seconds);
  }
  void abort(int) override {}
};

bool launched_by_mpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(variable) != nullptr) return true;
  return false;
}

// Sums the `T` tensors of `tensors` through a host buffer of at most
// `bucket_bytes`, streaming their elements as one flat array, so a bucket may
// hold the tail of one tensor and the head of the next.
template <class T>
void reduce_through_host(Communicator& comm, const std::vector<Tensor>& tensors, int64_t bucket_bytes) {
  const int64_t bucket = std::max<int64_t>(1, bucket_bytes / static_cast<int64_t>(sizeof(T)));
  std::vector<T> buffer;
  struct Piece {
    const Tensor* tensor;
    int64_t offset, count;  // elements
  };
  std::vector<Piece> pieces;
  auto flush = [&] {
    if (buffer.empty()) return;
    comm.all_reduce_sum(buffer.data(), static_cast<int64_t>(buffer.size()));
    int64_t at = 0;
    for (const Piece& piece : pieces) {
      const Device device = piece.tensor->device();
      auto* base = static_cast<T*>(piece.tensor->raw_data()) + piece.offset;
      dispatch::allocator(device).copy_from_host(base, buffer.data() + at, piece.count * sizeof(T), device.index);
      at += piece.count;
    }
    buffer.clear();
    pieces.clear();
  };
  for (const Tensor& tensor : tensors) {
    const Device device = tensor.device();
    for (int64_t offset = 0; offset < tensor.numel();) {
      const int64_t count = std::min(tensor.numel() - offset, bucket - static_cast<int64_t>(buffer.size()));
      const size_t at = buffer.size();
      buffer.resize(at + static_cast<size_t>(count));
      dispatch::allocator(device).copy_to_host(buffer.data() + at, static_cast<const T*>(tensor.raw_data()) + offset,
                                               count * sizeof(T), device.index);
      pieces.push_back({&tensor, offset, count});
      offset += count;
      if (static_cast<int64_t>(buffer.size()) == bucket) flush();
    }
  }
  flush();
}

}  // namespace

void Communicator::all_reduce_sum(const std::vector<Tensor>& tensors, int64_t bucket_bytes) {
  check(bucket_bytes > 0, "all_reduce_sum: the bucket size must be positive, got ", bucket_bytes, " bytes");
  std::vector<Tensor> floats, doubles;
  for (const Tensor& tensor : tensors) {
    if (tensor.dtype() == DType::Float32) floats.push_back(tensor);
    else if (tensor.dtype() == DType::Float64) doubles.push_back(tensor);
    else fail("all_reduce_sum: ", tensor, " is not floating");
  }
  if (size() == 1) return;
  reduce_through_host<float>(*this, floats, bucket_bytes);
  reduce_through_host<double>(*this, doubles, bucket_bytes);
}

std::unique_ptr<Communicator> make_single_process() { return std::make_unique<SingleProcess>(); }

bool built_with_mpi() {
#ifdef HKT_WITH_MPI
  return true;
#else
  return false;
#endif
}

Communicator& world() {
  static std::unique_ptr<Communicator> communicator = [] {
#ifdef HKT_WITH_MPI
    if (launched_by_mpi()) return make_mpi_communicator();
#endif
    return make_single_process();
  }();
  return *communicator;
}

}  // namespace hkt::distributed
