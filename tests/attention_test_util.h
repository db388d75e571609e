#pragma once
// Scopes the attention tests share: a CPU tile edge or a thread count for one
// test, restored when it ends.
#include "hkt.h"

namespace hkt::testing {

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
