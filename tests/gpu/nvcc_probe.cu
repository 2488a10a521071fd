// nvcc_probe.cu: compiled by meson at configure time to learn whether this nvcc works
// with this host compiler. It is not gpu_kernel.cu on purpose: a broken kernel must
// fail the build, not quietly skip it.
__global__ void garuda_nvcc_probe(int *p) { *p = 1; }
