#include "executor.h"

#include <algorithm>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "../ptx/errors.h"
#include "cfg.h"
#include "exec.h"

namespace stc {

namespace {
// The lanes of a 32-bit register column that hold a non-zero value, as a bit mask.
uint32_t nonzero_lanes(const uint32_t* col) {
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  uint32_t zeros = 0;
  for (int q = 0; q < 8; ++q) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(col + 4 * q));
    zeros |= static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(v, zero)))) << (4 * q);
  }
  return ~zeros;
#else
  uint32_t g = 0;
  for (int l = 0; l < 32; ++l) g |= static_cast<uint32_t>(col[l] != 0) << l;
  return g;
#endif
}
}  // namespace

void FuncStats::export_to(Stats& out) const {
  out[TStat::WarpInsts] = static_cast<double>(warp_insts);
  out[TStat::ThreadInsts] = static_cast<double>(thread_insts);
  for (size_t u = 0; u < by_unit.size(); ++u)  // stats.def lists warp_insts_<unit> in Unit order
    out.at(static_cast<int>(TStat::WarpInstsINT) + static_cast<int>(u)) = static_cast<double>(by_unit[u]);
}

uint32_t warps_per_cta(const LaunchState& L) {
  const uint32_t threads = L.block[0] * L.block[1] * L.block[2];
  return (threads + 31) / 32;
}

void Executor::init_cta(CtaState& cta, uint32_t linear_id) const {
  const Kernel& k = *L_.kernel;
  cta.linear_id = linear_id;
  cta.ctaid[0] = linear_id % L_.grid[0];
  cta.ctaid[1] = (linear_id / L_.grid[0]) % L_.grid[1];
  cta.ctaid[2] = linear_id / (L_.grid[0] * L_.grid[1]);
  cta.shared.assign(L_.shared_bytes, 0);
  cta.ext.clear();
  cta.woken = false;
  const uint32_t threads = L_.block[0] * L_.block[1] * L_.block[2];
  const uint32_t nw = warps_per_cta(L_);
  cta.warps.resize(nw);
  const int32_t end = static_cast<int32_t>(k.code.size());
  for (uint32_t i = 0; i < nw; ++i) {
    WarpState& w = cta.warps[i];
    w.warp_in_cta = i;
    const uint32_t n = std::min<uint32_t>(32, threads - 32 * i);
    w.valid = n == 32 ? 0xffffffffu : ((1u << n) - 1);
    w.exited = 0;
    w.regs.assign(k.reg_slots * size_t{32}, 0);  // (every kernel is compacted when its module loads)
    w.wregs.assign(k.wide_slots * size_t{32}, 0);
    w.local.assign(static_cast<size_t>(k.local_bytes) * 32, 0);
    w.stack.clear();
    w.stack.push_back({0, end, w.valid});
    w.at_barrier = false;
    w.waiting = false;
  }
}

void Executor::step(CtaState& cta, WarpState& w, WarpRecord& rec, uint32_t smid) {
  const Kernel& k = *L_.kernel;
  SimtEntry& top = w.stack.back();
  const int32_t pc = top.pc;
  const Instr& in = k.code[static_cast<size_t>(pc)];
  uint32_t mask = top.mask;
  if (in.guard >= 0) {  // every lane's predicate as a bit (branch-free), then negated and masked
    uint32_t g = 0;
    if (in.guard & kWideSlot) {
      for (int l = 0; l < 32; ++l) g |= static_cast<uint32_t>(w.reg(in.guard, l) != 0) << l;
    } else {
      g = nonzero_lanes(w.col32(in.guard));
    }
    mask &= in.guard_neg ? ~g : g;
  }
  const uint32_t simt_mask = top.mask;  // `top` names another entry once the instruction pushes onto the stack
  rec.reset(&in, pc, mask);
  ExecCtx ctx{L_, cta, w, rec, mask, smid};
  in.fn(ctx, in);
  if (w.waiting) return;  // not executed yet: it re-executes once woken
  ++stats_.warp_insts;
  stats_.thread_insts += static_cast<uint64_t>(__builtin_popcount(simt_mask));
  ++stats_.by_unit[static_cast<size_t>(in.unit)];
  if (!is_control(in)) {
    SimtEntry& next = w.stack.back();
    next.pc = pc + 1;
    if (next.pc != next.rpc && next.mask != 0) return;  // the usual instruction: nothing to pop
  }
  auto& st = w.stack;
  while (!st.empty() && (st.back().mask == 0 || st.back().pc == st.back().rpc)) st.pop_back();
}

bool Executor::release_barriers(CtaState& cta) const {
  uint32_t live = 0, ids = 0;  // ids: the barriers some live warp waits at, as bits
  for (const auto& w : cta.warps) {
    if (w.done()) continue;
    ++live;
    if (w.at_barrier && static_cast<uint32_t>(w.barrier_id) < 16) ids |= 1u << w.barrier_id;  // (ids 0-15 only)
  }
  if (ids == 0) return false;
  // Group by barrier id: release an id once its expected number of threads (or every live warp) arrived.
  bool released = false;
  for (; ids; ids &= ids - 1) {
    const int32_t id = __builtin_ctz(ids);
    uint32_t arrived = 0, expected = 0;
    for (const auto& w : cta.warps)
      if (!w.done() && w.at_barrier && w.barrier_id == id) {
        ++arrived;
        expected = w.barrier_count;
      }
    if (expected ? arrived * 32 >= expected : arrived == live) {
      for (auto& w : cta.warps)
        if (w.at_barrier && w.barrier_id == id) w.at_barrier = false;
      released = true;
    }
  }
  return released;
}

void Executor::run_cta(CtaState& cta, WarpRecord& rec, uint32_t linear_id, Watchdog& watchdog, uint64_t cycle) {
  const auto live_warps = [&cta] {
    std::vector<LiveWarp> live;
    for (const auto& w : cta.warps)
      if (!w.done()) live.push_back({&cta, &w});
    return live;
  };
  init_cta(cta, linear_id);
  while (true) {
    bool any_live = false;
    const uint64_t before = stats_.warp_insts;
    for (auto& w : cta.warps) {
      while (!w.done() && !w.at_barrier && !w.waiting) {
        if (cycle == 0) L_.clock = stats_.warp_insts;
        step(cta, w, rec, 0);
        watchdog.check(L_, stats_.warp_insts, cycle, live_warps, linear_id);
      }
      any_live |= !w.done();
    }
    if (!any_live) break;
    if (!release_barriers(cta) && stats_.warp_insts == before)
      throw SimFault("deadlock in kernel '" + L_.kernel->name + "': block " + std::to_string(linear_id) +
                     " has warps waiting at a barrier (or an mbarrier phase, a warpgroup) that can never complete");
  }
}

void Executor::run_functional(Watchdog& watchdog) {
  const uint64_t nctas = static_cast<uint64_t>(L_.grid[0]) * L_.grid[1] * L_.grid[2];
  CtaState cta;
  WarpRecord rec;
  for (uint64_t c = 0; c < nctas; ++c) run_cta(cta, rec, static_cast<uint32_t>(c), watchdog, 0);
}

}  // namespace stc
