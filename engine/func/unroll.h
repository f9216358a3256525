// Loop unrolling as ptxas does it before the hardware sees the code. nvcc's PTX is not what the GPU runs:
// ptxas unrolls small counted loops once more (the naive GEMM's 4-deep PTX loop runs 16 deep in SASS), and
// its scheduler then issues the loads of four iterations before their first use. Measured on sm_90 with
// benchmarks/calibration/unroll_probe.py (results/reference/h100_unroll_sass.csv): ptxas unrolls a loop 4x
// when
//   - it is one basic block ending in its conditional back-edge, without `.pragma "nounroll"`;
//   - the back-edge tests, with one `setp`, an integer induction register that the block steps once by an
//     immediate (add/sub) against an immediate or a register the block does not write (a register step,
//     as in grid-stride loops, or a data-dependent exit: not unrolled);
//   - the block has at most 48 instructions (probe: 48 unrolled, 56 kept) and at most 16 global SASS loads
//     (probe: 16 unrolled, 20 kept; mma_frag_global's 24 kept; a global wmma.load of A or B is 4 LDGs:
//     tcs_wmma_sample's loop of 8 is kept).
// The SASS keeps the original loop after the unrolled one for the last iterations; so does this pass.
#pragma once

#include "../ptx/ir.h"

namespace stc {

// Rewrites each such loop of `k` as: a check that at least four more iterations will run (else on to the
// merge point below), the unrolled body (four copies; the first three without the exit test, their
// iteration-local registers renamed so that the list scheduler can interleave the copies) with the test and
// the check again at its back-edge, a merge point where both ways in reconverge and lanes that are done
// leave, then the original loop for the remaining iterations. The checks evaluate the loop's own test on
// the induction register up to three steps ahead, so every lane runs exactly the iterations it ran before
// (the results are unchanged); they stand for the trip count ptxas computes once and are marked folded
// (Traits::folded: no issue slot). Labels, branch targets and `Kernel::nounroll` follow the moved code;
// reconvergence points must be computed again afterwards.
void unroll_loops(Kernel& k);

}  // namespace stc
