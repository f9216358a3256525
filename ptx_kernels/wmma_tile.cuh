// What the WMMA kernels share (gemm_wmma.cu, gemm_wmma_tiles.cu, gemm_wmma_batched.cu, spmm_shflbw_wmma.cu):
// the nvcuda::wmma m16n16k16 fragment types (fp16 inputs, fp32 accumulate) and an fp16 zero.

#pragma once

#include <cuda_fp16.h>
#include <mma.h>

namespace stc {

// fp16 zero built from its bit pattern (no inline-asm conversion in the PTX).
__device__ __forceinline__ half half_zero()
{
    __half_raw raw;
    raw.x = 0;
    return half(raw);
}

using FragA = nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, half, nvcuda::wmma::row_major>;
using FragB = nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, half, nvcuda::wmma::row_major>;
using FragC = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>;

}  // namespace stc
