// Divergent and data-dependent control flow: a loop whose trip count each thread reads from memory (with a
// branch on its parity), and the Collatz step count of each element (a while loop, data-dependent exit).
extern "C" __global__ void divergent_loop(const int* __restrict__ trips, const float* __restrict__ x,
                                          float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float y = x[i];
  int t = trips[i];
  for (int j = 0; j < t; ++j) {
    if ((j ^ i) & 1) y = y * 0.5f + 1.0f;
    else y = y * 0.25f - 1.0f;
  }
  out[i] = y;
}

extern "C" __global__ void collatz(const unsigned* __restrict__ start, unsigned* __restrict__ steps, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned long long v = start[i];
  unsigned s = 0;
  while (v != 1) {
    v = (v & 1) ? 3 * v + 1 : v / 2;
    ++s;
  }
  steps[i] = s;
}
