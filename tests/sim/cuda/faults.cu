// Kernels that fault on purpose: out-of-bounds and misaligned accesses, and trap.

extern "C" __global__ void oob_read(const float* a, float* out, int idx)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    out[t] = a[t == 37 ? idx : t];
}

extern "C" __global__ void oob_write(float* a, int idx)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    a[t == 5 ? idx : t] = 1.0f;
}

extern "C" __global__ void misaligned(const char* p, int* out, int off)
{
    out[threadIdx.x] = *reinterpret_cast<const int*>(p + 4 * threadIdx.x + (threadIdx.x == 3 ? off : 0));
}

extern "C" __global__ void shared_oob(int* out, int idx)
{
    __shared__ int s[64];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x == 9 ? idx : threadIdx.x];
}

extern "C" __global__ void trap_when(int* out, int when)
{
    if (threadIdx.x == when) __trap();
    out[threadIdx.x] = 1;
}
