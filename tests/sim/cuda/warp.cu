// Warp-level exchange: shuffles in every mode and segment width, votes, ballots and the active mask.

#define TID (blockIdx.x * blockDim.x + threadIdx.x)
#define FULL 0xffffffffu

extern "C" __global__ void shuffles(const int* a, const int* src, int* out)
{
    const int i = TID;
    const int v = a[i], s = src[i];
    int* o = out + i * 14;
    o[0] = __shfl_sync(FULL, v, s);
    o[1] = __shfl_up_sync(FULL, v, 3);
    o[2] = __shfl_down_sync(FULL, v, 5);
    o[3] = __shfl_xor_sync(FULL, v, 6);
    o[4] = __shfl_sync(FULL, v, s, 8);
    o[5] = __shfl_up_sync(FULL, v, 2, 16);
    o[6] = __shfl_down_sync(FULL, v, 3, 8);
    o[7] = __shfl_xor_sync(FULL, v, 5, 4);
    o[8] = __float_as_int(__shfl_xor_sync(FULL, __int_as_float(v), 1));
    const long long w = ((long long)v << 32) | (unsigned)s;
    const long long r = __shfl_sync(FULL, w, 31 - (threadIdx.x & 31));
    o[9] = (int)(r >> 32);
    o[10] = (int)r;
    o[11] = __shfl_down_sync(FULL, v, s & 31);
    o[12] = __shfl_up_sync(FULL, v, s & 15, 16);
    o[13] = __shfl_sync(FULL, v, s & 3, 2);
}

extern "C" __global__ void votes(const int* a, unsigned* out)
{
    const int i = TID;
    const int v = a[i];
    const unsigned lane = threadIdx.x & 31;
    unsigned* o = out + i * 10;
    const unsigned b = __ballot_sync(FULL, v > 0);
    o[0] = b;
    o[1] = __all_sync(FULL, v > -1000000);
    o[2] = __any_sync(FULL, v > 1000000);
    o[3] = __popc(b);
    o[4] = __activemask();
    if (v & 1) {
        const unsigned m = __activemask();
        o[5] = m;
        o[6] = __ballot_sync(m, v & 2);
        o[7] = __all_sync(m, v & 4);
    } else {
        const unsigned m = __activemask();
        o[5] = m;
        o[6] = __ballot_sync(m, v & 8);
        o[7] = __any_sync(m, v & 16);
    }
    if (lane < 13) o[8] = __any_sync(0x1fffu, v & 32);
    o[9] = __popc(__ballot_sync(FULL, v < 0) & ((1u << lane) - 1));  // rank among negative lanes
}
