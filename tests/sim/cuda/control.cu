// Control flow: divergent and nested branches, per-thread loops, a switch, early exits, uniform branches,
// barriers with partial warps, multi-dimensional launches and the special registers.

#define TID (blockIdx.x * blockDim.x + threadIdx.x)

// Every thread takes its own path through nested branches, a loop with a per-thread trip count, a switch
// and a data-dependent early return.
extern "C" __global__ void divergence(const int* a, int* out, int n)
{
    const int i = TID;
    if (i >= n) return;
    const int x = a[i];
    int r;
    if (x & 1) {
        if (x & 2) {
            r = 0;
            for (int j = 0; j < (x & 28); ++j) r += j ^ x;  // a loop inside a divergent branch
        } else {
            r = x - 7;
        }
    } else {
        r = x ^ 0x55;
        if ((x & 12) == 4) {
            out[i * 4 + 3] = 11;  // a store on one side only
            r += 100;
        }
    }
    int acc = 0;
    const int trips = (x >> 5) & 15;
    for (int j = 0; j < trips; ++j) {
        acc += j * x;
        if (acc & 1) acc ^= 3;
        if (acc > 5000000) break;
    }
    switch ((x >> 9) & 7) {
        case 0: r += 1; break;
        case 1: r *= 2; break;
        case 3: r -= 5; break;
        case 4: r ^= 0xff; // fall through
        case 5: r += 3; break;
        default: r += 1000; break;
    }
    out[i * 4 + 0] = r;
    out[i * 4 + 1] = acc;
    if ((x & 0x7000) == 0x3000) return;  // early exit of some threads after work
    out[i * 4 + 2] = r + acc;
}

// A dense switch (nvcc may lower it to a jump table) and a while loop whose exit condition differs by thread.
extern "C" __global__ void switch_loop(const int* a, int* out, int n)
{
    const int i = TID;
    if (i >= n) return;
    int x = a[i];
    int r = 0;
    switch (x & 7) {
        case 0: r = x * 3; break;
        case 1: r = x + 11; break;
        case 2: r = x - 13; break;
        case 3: r = x ^ 0x1234; break;
        case 4: r = x << 2; break;
        case 5: r = x >> 1; break;
        case 6: r = ~x; break;
        case 7: r = x * x; break;
    }
    int steps = 0;
    unsigned v = (unsigned)x & 0xfff;
    while (v != 1 && v != 0 && steps < 200) {  // Collatz: per-thread trip counts
        v = (v & 1) ? 3 * v + 1 : v >> 1;
        ++steps;
    }
    out[i * 2 + 0] = r;
    out[i * 2 + 1] = steps;
}

// A loop with a uniform trip count from a parameter and a branch on a parameter (warp-uniform).
extern "C" __global__ void uniform(const int* a, int* out, int n, int iters, int mode)
{
    const int i = TID;
    if (i >= n) return;
    int x = a[i];
    for (int j = 0; j < iters; ++j) x = x * 1664525 + 1013904223;
    if (mode == 2) x ^= 0x5a5a;
    else x += mode;
    out[i] = x;
}

// Barriers between phases of a shared-memory exchange in a block of any size (not a multiple of 32):
// neighbour sums, then a suffix sum by doubling. Threads with t >= live leave before the first barrier.
extern "C" __global__ void block_sync(const int* a, int* out, int live)
{
    __shared__ int s[1024];
    const int t = threadIdx.x;
    const int nt = min((int)blockDim.x, live);
    if (t >= nt) return;
    const int base = blockIdx.x * blockDim.x;
    s[t] = a[base + t];
    __syncthreads();
    const int v = s[(t + 1) % nt] + 2 * s[(t + nt - 1) % nt];
    __syncthreads();
    s[t] = v;
    __syncthreads();
    for (int stride = 1; stride < nt; stride *= 2) {
        const int other = t + stride < nt ? s[t + stride] : 0;
        __syncthreads();
        s[t] += other;
        __syncthreads();
    }
    out[base + t] = s[t];
}

// Every special register, written by every thread of a 3-D grid of 3-D blocks.
extern "C" __global__ void special_regs(unsigned* out)
{
    const unsigned tl = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned bl = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const unsigned g = bl * (blockDim.x * blockDim.y * blockDim.z) + tl;
    unsigned* o = out + g * 20;
    o[0] = threadIdx.x;
    o[1] = threadIdx.y;
    o[2] = threadIdx.z;
    o[3] = blockDim.x;
    o[4] = blockDim.y;
    o[5] = blockDim.z;
    o[6] = blockIdx.x;
    o[7] = blockIdx.y;
    o[8] = blockIdx.z;
    o[9] = gridDim.x;
    o[10] = gridDim.y;
    o[11] = gridDim.z;
    unsigned r;
    asm("mov.u32 %0, %%laneid;" : "=r"(r));
    o[12] = r;
    asm("mov.u32 %0, %%warpid;" : "=r"(r));
    o[13] = r;
    asm("mov.u32 %0, %%lanemask_eq;" : "=r"(r));
    o[14] = r;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(r));
    o[15] = r;
    asm("mov.u32 %0, %%lanemask_le;" : "=r"(r));
    o[16] = r;
    asm("mov.u32 %0, %%lanemask_gt;" : "=r"(r));
    o[17] = r;
    asm("mov.u32 %0, %%lanemask_ge;" : "=r"(r));
    o[18] = r;
    o[19] = g;
}
