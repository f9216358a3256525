// Memory instructions: narrow and vector global loads/stores, shared memory (static, dynamic, generic
// pointers into it), per-thread local arrays, __constant__ and __device__ variables, and atomics.
#include <cuda_fp16.h>

#define TID (blockIdx.x * blockDim.x + threadIdx.x)

// 8- and 16-bit loads with sign / zero extension, narrow stores, and a read-only (ld.global.nc) load.
extern "C" __global__ void narrow(const signed char* s8, const unsigned char* u8, const short* s16,
                                  const unsigned short* u16, int* out, unsigned char* o8, short* o16, int n)
{
    const int i = TID;
    if (i >= n) return;
    out[i * 5 + 0] = s8[i];
    out[i * 5 + 1] = u8[i];
    out[i * 5 + 2] = s16[i];
    out[i * 5 + 3] = u16[i];
    out[i * 5 + 4] = __ldg(&s16[(i * 7) % n]);
    o8[i] = (unsigned char)(u8[i] + s8[i] * 5);
    o16[i] = (short)(s16[i] * 3 - u16[i]);
}

// .v2 / .v4 loads and stores of 32- and 64-bit elements.
extern "C" __global__ void vectors(const float4* a, float4* b, const int2* c, int2* d, const double2* e, double2* f,
                                   int n)
{
    const int i = TID;
    if (i >= n) return;
    const float4 x = a[i];
    b[i] = make_float4(x.w, x.z + 1.0f, x.y, x.x);
    const int2 y = c[i];
    d[i] = make_int2(y.y, y.x + 1);
    const double2 z = e[i];
    f[i] = make_double2(z.y * 2.0, z.x);
    const float4 w = __ldg(&a[(i + 1) % n]);
    b[n + i] = w;
}

// Static shared arrays of two types: each block reverses its slice through shared memory.
extern "C" __global__ void shared_static(const float* a, const double* d, float* out, double* dout)
{
    __shared__ float tile[256];
    __shared__ double dt[256];
    const int t = threadIdx.x, nt = blockDim.x, base = blockIdx.x * blockDim.x;
    tile[t] = a[base + t];
    dt[nt - 1 - t] = d[base + t];
    __syncthreads();
    out[base + t] = tile[nt - 1 - t] * 2.0f;
    dout[base + t] = dt[t] + 1.0;
}

// Dynamic shared memory (extern __shared__) split in two arrays, next to a static one.
extern "C" __global__ void shared_dynamic(const int* a, int* out)
{
    extern __shared__ int dyn[];
    __shared__ int fixed[32];
    const int t = threadIdx.x, nt = blockDim.x, base = blockIdx.x * blockDim.x;
    int* second = dyn + nt;
    if (t < 32) fixed[t] = t * 1000;
    dyn[t] = a[base + t];
    second[nt - 1 - t] = a[base + t] * 3;
    __syncthreads();
    out[base + t] = dyn[(t + 5) % nt] + second[t] + fixed[t % 32];
}

// A per-thread array indexed with run-time values: nvcc keeps it in .local memory.
extern "C" __global__ void local_array(const int* idx, int* out, int n)
{
    const int i = TID;
    if (i >= n) return;
    const int x = idx[i];
    int arr[24];
    for (int j = 0; j < 24; ++j) arr[j] = (x * (j + 1)) ^ j;
    arr[x & 15] += 5;
    arr[(x >> 4) % 24] -= 3;
    out[i * 2 + 0] = arr[(x >> 8) % 24] + arr[(x >> 12) % 24];
    int s = 0;
    for (int j = 0; j < 24; j += (x & 3) + 1) s += arr[j];
    out[i * 2 + 1] = s;
}

__constant__ float c_table[8] = {1.5f, -2.0f, 3.25f, 0.0f, -0.5f, 100.0f, 7.0f, -8.125f};
__constant__ int c_scale = 3;
__constant__ short c_small[3] = {-1, 2, -3};
__constant__ double c_pi = 3.141592653589793;
__device__ float d_table[4] = {0.5f, 1.5f, 2.5f, 3.5f};
__device__ unsigned long long d_big = 0x0123456789abcdefULL;
__device__ int d_counter;
__device__ int d_written[256];

// __constant__ variables with initialisers and __device__ variables read, written and counted.
extern "C" __global__ void variables(const int* idx, float* out, double* dout, int n)
{
    const int i = TID;
    if (i >= n) return;
    const int x = idx[i];
    const float* p = (x & 8) ? c_table : d_table;  // a generic pointer to __constant__ or __device__ data
    out[i * 3 + 0] = c_table[x & 7] * c_scale + p[x & 3];
    out[i * 3 + 1] = d_table[x & 3] + c_small[x % 3];
    out[i * 3 + 2] = (float)((d_big >> (8 * (x & 7))) & 0xff);
    dout[i] = c_pi * x;
    d_written[i & 255] = x + 1;
    atomicAdd(&d_counter, 1);
}

// Reads (and resets) what `variables` left in __device__ memory.
extern "C" __global__ void read_variables(int* out)
{
    const int t = threadIdx.x;
    out[1 + t] = d_written[t];
    __syncthreads();
    if (t == 0) {
        out[0] = d_counter;
        d_counter = 0;
    }
}

// Generic pointers that point to shared or to global memory depending on the thread: loads and stores.
extern "C" __global__ void generic_ptr(const float* g, float* out, float* out2, int n)
{
    __shared__ float sh[128];
    const int t = threadIdx.x, i = TID;
    sh[t] = g[i] * 2.0f;
    __syncthreads();
    const float* p = (t & 1) ? &sh[(t * 7) % blockDim.x] : &g[(i + 3) % n];
    float* w = (t & 2) ? &sh[t] : &out2[i];
    const float v = *p + 1.0f;
    __syncthreads();  // every read of sh before any write
    *w = v;
    __syncthreads();
    out[i] = sh[t];
}

// Atomics with contention: every thread of every block updates the same few words.
extern "C" __global__ void atomics(const int* a, const float* f, const double* d, int* ctr, unsigned* uctr,
                                   float* fsum, double* dsum, unsigned long long* qsum, int* old, int* hist_out,
                                   int n)
{
    __shared__ int hist[16];
    const int t = threadIdx.x, i = TID;
    if (t < 16) hist[t] = 0;
    __syncthreads();
    if (i < n) {
        const int x = a[i];
        atomicAdd(&ctr[0], x);                      // red (result unused)
        old[i * 3 + 0] = atomicAdd(&ctr[1], 1);     // atom: returned values are a permutation
        atomicMin(&ctr[2], x);
        atomicMax(&ctr[3], x);
        atomicMin(&uctr[0], (unsigned)x);
        atomicMax(&uctr[1], (unsigned)x);
        atomicInc(&uctr[2], 37u);
        atomicDec(&uctr[3], 50u);
        atomicXor(&ctr[4], x);
        atomicOr(&ctr[5], x & 0x01010101);
        atomicAnd(&ctr[6], x | 0x10000000);
        old[i * 3 + 1] = atomicExch(&ctr[7], i);
        int seen = ctr[8], assumed;  // a max built from atomicCAS retries
        do {
            assumed = seen;
            seen = atomicCAS(&ctr[8], assumed, max(assumed, x ^ 0x5555));
        } while (assumed != seen);
        old[i * 3 + 2] = seen;
        atomicAdd(fsum, f[i]);
        atomicAdd(dsum, d[i]);
        atomicAdd(qsum, (unsigned long long)(unsigned)x);
        atomicAdd(&hist[x & 15], 1);                // shared-memory atomics
        asm volatile("red.global.add.u32 [%0], %1;" ::"l"(&uctr[4]), "r"((unsigned)x & 0xff) : "memory");
        asm volatile("red.global.max.s32 [%0], %1;" ::"l"(&ctr[9]), "r"(x) : "memory");
        asm volatile("red.global.add.f32 [%0], %1;" ::"l"(&fsum[1]), "f"(f[i] * 2.0f) : "memory");
        asm volatile("red.shared.add.u32 [%0], %1;" ::"r"((unsigned)__cvta_generic_to_shared(&hist[(x >> 4) & 15])),
                     "r"(2u) : "memory");
    }
    __syncthreads();
    if (t < 16) atomicAdd(&hist_out[t], hist[t]);
}

// Packed-half and half atomics (atom.add.noftz.f16x2 / .f16), and f32 atomic adds of subnormal values.
extern "C" __global__ void half_atomics(__half2* h2, __half* h, float* f, const float* v, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(h2, __floats2half2_rn(v[i], -2.0f * v[i]));
    atomicAdd(h, __float2half_rn(v[i] * 0.5f));
    atomicAdd(&f[0], 1e-40f);  // a subnormal addend
    atomicAdd(&f[1], v[i] * 1e-39f);
}

// Each warp's lanes read two buffers and write two others, alternating by lane: one warp instruction's
// accesses span two allocations (the engine resolves a warp's accesses at once only within one allocation,
// otherwise lane by lane: both must give these values).
extern "C" __global__ void two_buffers(const float* a, const float* b, float* x, float* y, int n)
{
    const int i = TID;
    if (i >= n) return;
    const float* src = (threadIdx.x & 1) ? a : b;
    float* dst = (threadIdx.x & 2) ? x : y;
    dst[i] = src[i] * 3.0f + 1.0f;
}
