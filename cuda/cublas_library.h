#pragma once
// cuBLAS is opened on the first CUDA GEMM, not linked: loading libcublas
// (and the libcublasLt it loads) costs about 210 MiB of resident memory and
// 0.1 s at start-up in every process of a CUDA build, CPU-only runs and
// `--version` included (docs/PERFORMANCE.md, "Measured on 2026-12-05,
// night"). The entry points the backend calls are in cuda/runtime.h.
namespace hkt::cuda {

// Whether libcublas is mapped into this process (by us or anyone).
bool cublas_loaded();
// Opens cuBLAS and resolves every entry point the backend uses, as the
// first CUDA GEMM does; throws hkt::Error naming the library or symbol that
// is missing and the loader's message.
void open_cublas();

}  // namespace hkt::cuda
