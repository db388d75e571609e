#include "distributed/mpi_communicator.h"

// The C API only: MPI's deprecated C++ bindings warn under -Wextra.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>

#include "distributed/nccl_reducer.h"
#include "distributed/watchdog.h"

namespace hkt::distributed {
namespace {

constexpr double kDefaultTimeoutSeconds = 300;

void check_mpi(int status, const char* what) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  fail("MPI: ", what, " failed: ", std::string(text, static_cast<size_t>(length)));
}

// MPI counts are int: longer buffers go in slices.
template <class T>
void all_reduce_in_slices(T* data, int64_t count, MPI_Datatype type) {
  for (int64_t at = 0; at < count; at += INT_MAX) {
    const int slice = static_cast<int>(std::min<int64_t>(INT_MAX, count - at));
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, data + at, slice, type, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  }
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    abort_from_any_thread_ = provided >= MPI_THREAD_MULTIPLE;
    // Errors come back as codes (and become hkt::Error) instead of ending the process silently.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    watchdog_ = std::make_unique<Watchdog>(rank_, kDefaultTimeoutSeconds, [this](const std::string& message) {
      std::fprintf(stderr, "hkt-train: %s\n", message.c_str());
      std::fflush(stderr);
      if (abort_from_any_thread_) MPI_Abort(MPI_COMM_WORLD, 1);
      std::_Exit(1);  // MPI_Abort from this thread is not allowed at a lower thread level
    });
  }

  ~MpiCommunicator() override {
    watchdog_.reset();
    nccl_.reset();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override {
#ifdef HKT_WITH_NCCL
    return "mpi+nccl";
#else
    return "mpi";
#endif
  }

  void all_reduce_sum(float* data, int64_t count) override {
    auto armed = watchdog_->arm("all-reduce");
    all_reduce_in_slices(data, count, MPI_FLOAT);
  }
  void all_reduce_sum(double* data, int64_t count) override {
    auto armed = watchdog_->arm("all-reduce");
    all_reduce_in_slices(data, count, MPI_DOUBLE);
  }

  void all_reduce_sum(const std::vector<Tensor>& tensors, int64_t bucket_bytes) override {
#ifdef HKT_WITH_NCCL
    std::vector<Tensor> on_cuda, elsewhere;
    for (const Tensor& tensor : tensors)
      (tensor.device().type == DeviceType::CUDA ? on_cuda : elsewhere).push_back(tensor);
    if (!on_cuda.empty() && size_ > 1) {
      const int device_index = on_cuda.front().device().index;
      for (const Tensor& tensor : on_cuda)
        check(tensor.device().index == device_index, "all_reduce_sum: tensors on ", on_cuda.front().device(),
              " and ", tensor.device(), "; one device per rank");
      if (!nccl_) {
        auto broadcast_id = [this](void* bytes, int64_t count) { broadcast(bytes, count, 0); };
        nccl_ = make_nccl_reducer(rank_, size_, device_index, broadcast_id);
      }
      auto armed = watchdog_->arm("NCCL all-reduce");
      nccl_->all_reduce_sum(on_cuda, bucket_bytes);
    }
    Communicator::all_reduce_sum(elsewhere, bucket_bytes);
#else
    Communicator::all_reduce_sum(tensors, bucket_bytes);
#endif
  }

  void broadcast(void* data, int64_t bytes, int root) override {
    check(root >= 0 && root < size_, "broadcast: root ", root, " of ", size_, " ranks");
    auto armed = watchdog_->arm("broadcast");
    auto* at = static_cast<char*>(data);
    for (int64_t done = 0; done < bytes; done += INT_MAX) {
      const int slice = static_cast<int>(std::min<int64_t>(INT_MAX, bytes - done));
      check_mpi(MPI_Bcast(at + done, slice, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
    }
  }

  void barrier() override {
    auto armed = watchdog_->arm("barrier");
    check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  }

  void set_timeout(double seconds) override { watchdog_->set_timeout(seconds); }

  void abort(int exit_code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    if (size_ > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
  }

 private:
  int rank_ = 0, size_ = 1;
  bool abort_from_any_thread_ = false;
  std::unique_ptr<Watchdog> watchdog_;
  std::unique_ptr<NcclReducer> nccl_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

}  // namespace hkt::distributed
