#include "distributed/gradients.h"

#include "engine/autograd.h"
#include "engine/dispatch.h"

namespace hkt::distributed {

Shard shard_of(int64_t total, int rank, int ranks) {
  check(ranks >= 1 && rank >= 0 && rank < ranks, "shard_of: rank ", rank, " of ", ranks);
  check(total >= 1, "shard_of: a global batch of ", total, " examples");
  const int64_t base = total / ranks, extra = total % ranks;
  Shard shard;
  shard.begin = rank * base + std::min<int64_t>(rank, extra);
  shard.end = shard.begin + base + (rank < extra ? 1 : 0);
  shard.weight = static_cast<double>(shard.size()) / static_cast<double>(total);
  return shard;
}

void all_reduce_gradients(Communicator& comm, const NamedTensors& parameters, int64_t bucket_bytes) {
  if (comm.size() == 1) return;
  NoGradGuard no_grad;
  // Which parameters have a gradient anywhere: one count per parameter.
  std::vector<double> has_grad(parameters.size());
  for (size_t i = 0; i < parameters.size(); ++i) has_grad[i] = parameters[i].second.grad().defined() ? 1 : 0;
  comm.all_reduce_sum(has_grad.data(), static_cast<int64_t>(has_grad.size()));
  std::vector<Tensor> grads;
  for (size_t i = 0; i < parameters.size(); ++i) {
    const Tensor& parameter = parameters[i].second;
    if (has_grad[i] == 0) continue;
    if (!parameter.grad().defined())
      parameter.set_grad(Tensor::zeros(parameter.shape(), parameter.dtype(), parameter.device()));
    grads.push_back(parameter.grad());
  }
  comm.all_reduce_sum(grads, bucket_bytes);
}

void broadcast_parameters(Communicator& comm, const NamedTensors& parameters) {
  if (comm.size() == 1) return;
  for (const auto& [name, parameter] : parameters) {
    std::vector<char> host(parameter.nbytes());
    const Device device = parameter.device();
    const auto& allocator = dispatch::allocator(device);
    allocator.copy_to_host(host.data(), parameter.raw_data(), host.size(), device.index);
    comm.broadcast(host.data(), static_cast<int64_t>(host.size()), 0);
    allocator.copy_from_host(parameter.raw_data(), host.data(), host.size(), device.index);
  }
}

}  // namespace hkt::distributed
