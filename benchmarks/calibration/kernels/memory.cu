// Streaming kernels of the calibration suite: copy, read-only (a sum, one atomic per CTA), write-only.
// Every thread moves float4s in a grid-stride loop, so any grid covers any size.
extern "C" __global__ void stream_copy(const float4* __restrict__ in, float4* __restrict__ out, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x)
    out[i] = in[i];
}

extern "C" __global__ void stream_write(float4* __restrict__ out, float v, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x)
    out[i] = make_float4(v, v + 1.0f, v + 2.0f, v + 3.0f);
}

// Sums n4 float4s: per-thread sums, a shared-memory tree per CTA (blockDim.x a power of two <= 1024), one
// atomicAdd per CTA into *out.
extern "C" __global__ void stream_read(const float4* __restrict__ in, float* out, long long n4) {
  __shared__ float part[1024];
  float s = 0.0f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
    float4 v = in[i];
    s += (v.x + v.y) + (v.z + v.w);
  }
  part[threadIdx.x] = s;
  __syncthreads();
  for (unsigned h = blockDim.x / 2; h > 0; h /= 2) {
    if (threadIdx.x < h) part[threadIdx.x] += part[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, part[0]);
}
