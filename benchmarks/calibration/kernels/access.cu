// Access-pattern kernels: strided reads (stride 1 is coalesced, 32 touches one sector per lane) and a gather
// through a random index array (data-dependent, uncoalesced addresses).
extern "C" __global__ void strided_read(const float* __restrict__ in, float* __restrict__ out, int stride,
                                        unsigned mask, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[((unsigned)i * (unsigned)stride) & mask] * 2.0f;
}

extern "C" __global__ void gather(const float* __restrict__ in, const int* __restrict__ idx,
                                  float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[idx[i]] + 1.0f;
}
