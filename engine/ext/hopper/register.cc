// The Hopper extension (sm_90): its opcode rows, timing classes and stats, enabled by hopper.enabled (a key
// of every sm_90 config; stcsim/config/extensions/hopper.py).
//   hopper.wgmma / hopper.wgmma_sp: the math takes 16 N 16 / (wgmma_fma_per_cycle / 4) cycles (wgmma.sp:
//     twice the dense-equivalent work at wgmma_sparse_speedup_pct); each warp of the warpgroup occupies its
//     sub-core's Tensor Core pipe for the longer of the math and the operand fetch from shared memory (A when
//     from a descriptor, B) at wgmma_operand_bytes_per_cycle; its accumulators are ready the math time plus
//     wgmma_latency (wgmma.sp: wgmma_sp_latency) cycles after its issue.
//   hopper.wgmma_sync (fence, commit_group, wait_group), hopper.fence: one issue cycle.
//   hopper.mbarrier: the LD/ST pipe's issue interval; the shared-memory path gives the latency.
//   hopper.mbarrier_wait (test_wait, try_wait): one cycle, plus what is left of the TMA copies counted into
//     the phase it saw complete: tma_latency + bytes / tma_bytes_per_cycle after the first copy's issue.
//   hopper.tma (cp.async.bulk.tensor): the LD/ST pipe's issue interval; the copy engine's time is charged to
//     the waits on its mbarrier, which also wait for the copies' global sectors: requested at
//     tma_bytes_per_cycle through the L2 slices (and DRAM), shared with every other SM's traffic.
#include <algorithm>

#include "../../func/state.h"
#include "../../timing/config.h"
#include "../extension.h"
#include "decoders.h"
#include "warpgroup.h"

namespace stc::hopper {
namespace {

uint32_t ceil_div(uint64_t a, uint64_t b) { return static_cast<uint32_t>((a + b - 1) / b); }

int stat(const char* name) { return stat_id(name); }

OpClassDef wgmma_class(bool sparse) {
  return {sparse ? "hopper.wgmma_sp" : "hopper.wgmma", [sparse](ConfigReader& r, std::string&) -> std::optional<OpDesc> {
            const uint64_t per_sub = std::max<uint64_t>(1, r.u32("hopper.wgmma_fma_per_cycle") / 4);
            const uint64_t feed = std::max(1u, r.u32("hopper.wgmma_operand_bytes_per_cycle"));
            const uint32_t extra = r.u32(sparse ? "hopper.wgmma_sp_latency" : "hopper.wgmma_latency");
            const uint32_t pct = r.u32("hopper.wgmma_sparse_speedup_pct");
            OpDesc d;
            d.model = [per_sub, feed, extra, pct, sparse](const WorkSummary& work) {
              const WgmmaWork* w = work.get<WgmmaWork>();  // none: a warp that waited at the rendezvous
              const uint64_t n = 8u * (w ? w->n8 : 1);
              const bool a_smem = !w || w->a_in_smem;
              uint32_t math = ceil_div(16 * n * 16, per_sub);
              if (sparse) math = ceil_div(2ull * math * 100, pct);
              // Operands read from shared memory: A (64 x 16 f16, the kept half when sparse) when it comes
              // from a descriptor, and B (N x K f16).
              const uint64_t bytes = (a_smem ? 64u * 16 * 2 : 0) + n * (sparse ? 32 : 16) * 2;
              const uint32_t busy = std::max(math, ceil_div(bytes, feed));
              return OpTiming{math + extra, busy};
            };
            static const int insts = stat("hopper_wgmma_insts"), busy_cycles = stat("hopper_wgmma_busy_cycles");
            d.account = [](Stats& s, const OpTiming& t) {
              s.at(insts) += 1;
              s.at(busy_cycles) += t.interval;
            };
            return d;
          }};
}

OpClassDef one_cycle(const char* name) {
  return {name, [](ConfigReader&, std::string&) -> std::optional<OpDesc> { return OpDesc{}; }};
}

OpClassDef mbarrier_class() {
  return {"hopper.mbarrier", [](ConfigReader& r, std::string&) -> std::optional<OpDesc> {
            OpDesc d;
            d.timing.interval = r.u32("units.ldst.issue_interval");
            return d;
          }};
}

OpClassDef wait_class() {
  return {"hopper.mbarrier_wait", [](ConfigReader& r, std::string&) -> std::optional<OpDesc> {
            const uint64_t lat = r.u32("hopper.tma_latency"), bw = std::max(1u, r.u32("hopper.tma_bytes_per_cycle"));
            OpDesc d;
            d.model = [lat, bw](const WorkSummary& work) {
              const BulkWaitWork* w = work.get<BulkWaitWork>();
              if (!w) return OpTiming{1, 1};
              const uint64_t ready = lat + (w->bytes + bw - 1) / bw;
              return OpTiming{1 + static_cast<uint32_t>(ready > w->elapsed ? ready - w->elapsed : 0), 1};
            };
            return d;
          }};
}

OpClassDef tma_class() {
  return {"hopper.tma", [](ConfigReader& r, std::string&) -> std::optional<OpDesc> {
            OpDesc d;
            d.timing.interval = r.u32("units.ldst.issue_interval");
            d.bulk_bytes_per_cycle = std::max(1u, r.u32("hopper.tma_bytes_per_cycle"));
            return d;
          }};
}

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

const int kRegistered = register_extension({
    "hopper", "hopper.enabled", "use an sm_90 config such as h100",
    {{"wgmma", "", Op::Ext, Unit::TENSOR, &decode_wgmma, Preset::FENCE_NODST},
     {"mbarrier", "", Op::Ext, Unit::LDST, &decode_mbarrier, Preset::FENCE_NODST},
     {"fence.proxy", "", Op::Ext, Unit::SYNC, &decode_fence, Preset::FENCE_NODST},
     {"fence.mbarrier_init", "", Op::Ext, Unit::SYNC, &decode_fence, Preset::FENCE_NODST},
     {"cp.async.bulk", "", Op::Ext, Unit::LDST, &decode_tma, Preset::FENCE_NODST}},
    {wgmma_class(false), wgmma_class(true), one_cycle("hopper.wgmma_sync"), one_cycle("hopper.fence"),
     mbarrier_class(), wait_class(), tma_class()},
    {{"hopper_wgmma_insts", "hopper", "instructions", "wgmma.mma_async{.sp} warp instructions issued (4 per "
      "warpgroup instruction)", StatKind::COUNTER, nullptr},
     {"hopper_wgmma_busy_cycles", "hopper", "cycles", "Tensor Core pipe occupancy of the wgmma instructions, "
      "summed over sub-cores", StatKind::COUNTER, nullptr},
     {"hopper_wgmma_mean_busy", "hopper", "cycles", "hopper_wgmma_busy_cycles / hopper_wgmma_insts",
      StatKind::FORMULA, [](const Stats& s) {
        return ratio(s.at(stat("hopper_wgmma_busy_cycles")), s.at(stat("hopper_wgmma_insts")));
      }}},
});

}  // namespace
}  // namespace stc::hopper
