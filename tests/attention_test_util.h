#pragma once
// Scopes the attention tests share: a CPU path, tile edge or thread count for one
// test, restored when it ends.
#include <string>

#include "hkt.h"
#include "ops/attention_cpu.h"

namespace hkt::testing {

// Forces a CPU attention path (ops/attention_cpu.h) for a scope; the automatic choice again after it.
struct PathScope {
  explicit PathScope(const std::string& name) { set_attention_cpu_path(name); }
  ~PathScope() { set_attention_cpu_path(""); }
};

struct TileScope {
  explicit TileScope(int64_t tile) { set_attention_cpu_tile(tile); }
  ~TileScope() { set_attention_cpu_tile(0); }  // the default again
};

struct ThreadScope {
  explicit ThreadScope(int threads) : previous(num_threads()) { set_num_threads(threads); }
  ~ThreadScope() { set_num_threads(previous); }
  int previous;
};

}  // namespace hkt::testing
