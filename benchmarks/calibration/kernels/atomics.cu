// Reductions with atomics: a histogram with one global atomic per element (contention grows as bins
// shrink) and an integer sum with a shared-memory atomic per element and one global atomic per CTA.
extern "C" __global__ void histogram_atomic(const int* __restrict__ in, unsigned* bins, int nbins, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&bins[(unsigned)in[i] % (unsigned)nbins], 1u);
}

extern "C" __global__ void reduce_atomic(const int* __restrict__ in, unsigned long long* out, int n) {
  __shared__ unsigned long long total;
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  unsigned long long s = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s += (unsigned)in[i];
  atomicAdd(&total, s);
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(out, total);
}
