// L2 slice map probe (benchmarks/calibration/slice_map_probe.py): two groups of warps hammer one word each
// with whole-warp same-address reductions (RED; every lane its own round of the slice's atomic unit). When
// both words live on one L2 slice the launch takes about twice as long as when they live on two.
extern "C" __global__ void pair_red(unsigned* base, unsigned word_a, unsigned word_b, int iters) {
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  unsigned* p = base + ((warp & 1) ? word_b : word_a);
  for (int i = 0; i < iters; ++i) atomicAdd(p, 1u);
}
