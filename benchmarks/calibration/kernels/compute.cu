// Compute-bound and occupancy kernels. fma_loop: `iters` dependent FMAs on 4 independent chains per thread
// (grid size set freely: tiny grids and many waves). smem_stride: every thread reads shared memory at
// (tid * stride) mod 1024 words, `iters` times (stride 1: no bank conflict; 32: 32-way). occupancy_smem:
// each CTA stages its slice of `in` in dynamic shared memory whose size limits the CTAs per SM.
extern "C" __global__ void fma_loop(const float* __restrict__ in, float* __restrict__ out, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float a = in[i], b = a + 1.0f, c = a + 2.0f, d = a + 3.0f;
  for (int j = 0; j < iters; ++j) {
    a = fmaf(a, 0.999f, 0.001f);
    b = fmaf(b, 0.998f, 0.002f);
    c = fmaf(c, 0.997f, 0.003f);
    d = fmaf(d, 0.996f, 0.004f);
  }
  out[i] = (a + b) + (c + d);
}

extern "C" __global__ void smem_stride(const float* __restrict__ in, float* __restrict__ out, int stride,
                                       int iters) {
  __shared__ float buf[1024];
  for (int j = threadIdx.x; j < 1024; j += blockDim.x) buf[j] = in[blockIdx.x * 1024 + j];
  __syncthreads();
  float s = 0.0f;
  unsigned k = threadIdx.x;
  for (int j = 0; j < iters; ++j) {
    s += buf[(k * (unsigned)stride) & 1023u];
    k += 1;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

extern "C" __global__ void occupancy_smem(const float* __restrict__ in, float* __restrict__ out, int words) {
  extern __shared__ float tile[];
  const float* src = in + (long long)blockIdx.x * words;
  for (int j = threadIdx.x; j < words; j += blockDim.x) tile[j] = src[j];
  __syncthreads();
  float s = 0.0f;
  for (int j = threadIdx.x; j < words; j += blockDim.x) s += tile[words - 1 - j] * tile[j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
