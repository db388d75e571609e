// Which CPU path the fused attention ops run (ops/attention_cpu.h): the
// widest this build has, this CPU reports and the head width allows, unless
// HKT_CPU_PATH or set_attention_cpu_path() names one.
#include "ops/attention_cpu.h"

#include <cstdlib>
#include <mutex>

#include "engine/error.h"

namespace hkt::attention_cpu {

namespace {

bool cpu_runs(const Path& path) {
#if defined(__x86_64__) || defined(__i386__)
  if (path.width == 16) return __builtin_cpu_supports("avx512f");
  if (path.width == 8) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return path.width == 1;
}

std::mutex forced_mutex;
std::string forced_name;  // "" = automatic
bool forced_from_environment = false;

std::string forced() {
  std::lock_guard<std::mutex> lock(forced_mutex);
  if (!forced_from_environment) {
    forced_from_environment = true;
    if (const char* name = std::getenv("HKT_CPU_PATH")) forced_name = name;
  }
  return forced_name;
}

const Path* find(const std::string& name) {
  for (const Path* path : available_paths())
    if (name == path->name) return path;
  std::string names;
  for (const Path* path : available_paths()) names += std::string(names.empty() ? "" : ", ") + path->name;
  fail("attention CPU path '", name, "' is not available in this build on this CPU (available: ", names, ")");
}

}  // namespace

const std::vector<const Path*>& available_paths() {
  // The CPU does not change under a running program: looked up once, not per call.
  static const std::vector<const Path*> paths = [] {
    std::vector<const Path*> found;
    for (const Path* path : {avx512_path(), avx2_path()})
      if (path && cpu_runs(*path)) found.push_back(path);
    found.push_back(plain_path());
    return found;
  }();
  return paths;
}

const Path& widest_path() { return *available_paths().front(); }

const Path& select_path(int64_t head_dim) {
  const std::string name = forced();
  if (!name.empty()) {
    const Path& path = *find(name);
    check(head_dim % path.width == 0, "attention CPU path '", name, "' needs a head width that is a multiple of ",
          path.width, ", got ", head_dim);
    return path;
  }
  for (const Path* path : available_paths())
    if (head_dim % path->width == 0) return *path;
  return *plain_path();
}

}  // namespace hkt::attention_cpu

namespace hkt {

std::string attention_cpu_path(int64_t head_dim) { return attention_cpu::select_path(head_dim).name; }

void set_attention_cpu_path(const std::string& name) {
  if (!name.empty()) attention_cpu::find(name);  // throws when unavailable
  attention_cpu::forced();                       // read HKT_CPU_PATH first so that it cannot override this call later
  std::lock_guard<std::mutex> lock(attention_cpu::forced_mutex);
  attention_cpu::forced_name = name;
}

std::vector<std::string> attention_cpu_paths() {
  std::vector<std::string> names;
  for (const auto* path : attention_cpu::available_paths()) names.push_back(path->name);
  return names;
}

}  // namespace hkt
