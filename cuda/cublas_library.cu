// cuBLAS resolved at run time (see cublas_library.h).
#include "cuda/cublas_library.h"

#include <dlfcn.h>

#include <string>

#include "cuda/runtime.h"
#include "engine/error.h"

#define HKT_TEXT(x) #x
#define HKT_NUMBER_TEXT(x) HKT_TEXT(x)

namespace hkt::cuda {
namespace {

// The library's soname for the cuBLAS this was compiled against, then the
// file CMake linked against at build time (HKT_CUBLAS_LIBRARY), for an
// install whose run path does not reach CUDA's libraries.
const char* const kCandidates[] = {
    "libcublas.so." HKT_NUMBER_TEXT(CUBLAS_VER_MAJOR),
#ifdef HKT_CUBLAS_LIBRARY
    HKT_CUBLAS_LIBRARY,
#endif
};

template <class F>
void resolve(void* library, const char* name, F& entry) {
  entry = reinterpret_cast<F>(dlsym(library, name));
  if (entry == nullptr)
    fail("cuda: cuBLAS has no entry point ", name, " (", dlerror(), "); the backend was built against cuBLAS ",
         CUBLAS_VER_MAJOR, ".", CUBLAS_VER_MINOR);
}

CublasLibrary load() {
  void* library = nullptr;
  std::string errors;
  for (const char* name : kCandidates) {
    library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) break;
    errors += std::string(errors.empty() ? "" : "; ") + dlerror();
  }
  if (library == nullptr) fail("cuda: cannot open cuBLAS (", errors, ")");
  CublasLibrary api;
  resolve(library, "cublasCreate_v2", api.create);
  resolve(library, "cublasSetStream_v2", api.set_stream);
  resolve(library, "cublasSgemm_v2", api.sgemm);
  resolve(library, "cublasSgemmStridedBatched", api.sgemm_strided_batched);
  resolve(library, "cublasGetStatusString", api.status_string);
  return api;  // the library stays open for the process's lifetime
}

}  // namespace

const CublasLibrary& cublas_library() {
  // Initialised once, thread-safe; if load() throws, the next call tries again.
  static const CublasLibrary api = load();
  return api;
}

bool cublas_loaded() {
  for (const char* name : kCandidates) {
    void* library = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
    if (library != nullptr) {
      dlclose(library);  // drops the reference RTLD_NOLOAD took
      return true;
    }
  }
  return false;
}

void open_cublas() { cublas_library(); }

}  // namespace hkt::cuda
