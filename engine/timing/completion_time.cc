// When an issued instruction's work completes (TimingModel::complete_time): memory accesses through the
// memory system, cp.async groups, and the SASS memory instructions a PTX memory instruction becomes.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "gpu_internal.h"

namespace stc {

// SASS memory instructions a PTX memory instruction becomes: each moves at most 16 bytes per thread, so a
// thread's accesses, merged where contiguous, need ceil(bytes / 16) of them (the most of any thread).
// Matrix fragments from shared memory (wmma A/B) load with one ldmatrix-like instruction.
uint32_t memory_instructions(const Instr& in, WarpRecord& rec) {
  if (rec.no_accesses()) return 1;
  if (in.traits.fragment_load && rec.space == Space::Shared) return 1;
  rec.materialize();
  // The common case in one cheap pass: at most one record of at most 16 bytes per lane (records come in
  // lane order) is one instruction.
  bool one = true;
  int prev = -1;
  for (const MemAccess& a : rec.acc) {
    if (a.space != rec.space && rec.space != Space::Generic) continue;
    one &= a.lane > prev && a.size <= 16;
    prev = a.lane;
  }
  if (one) return 1;
  uint32_t most = 1, count = 0;
  int lane = -1;
  uint64_t run_end = 0, run_bytes = 0;
  for (const MemAccess& a : rec.acc) {
    if (a.space != rec.space && rec.space != Space::Generic) continue;  // cp.async: count the global side
    if (a.lane != lane) {
      if (lane >= 0) most = std::max(most, count + static_cast<uint32_t>((run_bytes + 15) / 16));
      lane = a.lane;
      count = 0;
      run_bytes = 0;
    } else if (a.addr != run_end) {
      count += static_cast<uint32_t>((run_bytes + 15) / 16);
      run_bytes = 0;
    }
    run_bytes += a.size;
    run_end = a.addr + a.size;
  }
  return std::max(most, count + static_cast<uint32_t>((run_bytes + 15) / 16));
}

uint64_t TimingModel::complete_time(const Instr& in, WarpRecord& rec, const OpTiming& ot, WarpT& w,
                                    uint32_t sm, uint64_t t, Part& part) {
  if (in.traits.tensor_math) (*part.stats)[TStat::TensorInsts] += 1;
  switch (in.traits.mem) {
    case MemKind::None:
      if (in.traits.extension) {  // the two work records of bulk copies the core reads (func/state.h)
        if (const BulkCopyWork* b = rec.work.get<BulkCopyWork>()) {
          bulk_copy(b->key, rec, *desc_[static_cast<size_t>(rec.pc)], w, sm, t, part);
        } else if (const BulkWaitWork* b = rec.work.get<BulkWaitWork>()) {
          CtaSlot::BulkPhase& p = w.cta->bulk_phase(b->key);
          p.open = false;
          return std::max(t + ot.latency, p.done);
        }
      }
      if (in.traits.async == AsyncKind::Commit) {
        w.groups.push_back(w.open_group);
        w.open_group = 0;
      }
      if (in.traits.async_group) {
        w.open_group = std::max(w.open_group, t + ot.latency);
        w.last_done = std::max(w.last_done, t + ot.latency);
      }
      return t + ot.latency;
    case MemKind::AsyncCopy: {
      rec.materialize();
      if (rec.acc.empty()) return t + 1;
      std::vector<MemAccess>& global = part.async_global;
      std::vector<MemAccess>& shared = part.async_shared;
      global.clear();
      shared.clear();
      for (const auto& a : rec.acc) (a.space == Space::Shared ? shared : global).push_back(a);
      for (const auto& a : shared) (*part.stats)[TStat::CpAsyncBytes] += a.size;
      uint64_t done = global.empty() ? t : mem_.load(sm, t, global, !(in.flags & F_CG));
      done = std::max(done, mem_.shared(sm, done, shared));
      if (cfg_.cp_async_sync) done = t + 1;
      w.open_group = std::max(w.open_group, done);
      w.last_done = std::max(w.last_done, done);
      return t + 1;
    }
    case MemKind::Load: case MemKind::Store: case MemKind::Atomic: {
      if (rec.no_accesses()) return t + 1;
      const uint64_t done = access_time(in, rec, w, sm, t);
      if (!in.traits.fragment_load) return done;
      // a matrix-fragment load: from shared memory one SASS LDSM (smem.matrix_extra_latency beyond its
      // wavefronts); from elsewhere, for a layout HMMA reads transposed (A .col, B .row), the MOVM.16.MT88
      // transposes ptxas adds after the loads (tensor.movm_latency)
      if (rec.space == Space::Shared) return done + cfg_.smem_matrix_extra_latency;
      return done + (in.traits.fragment_transposed ? cfg_.movm_latency : 0);
    }
  }
  return t + ot.latency;
}

void TimingModel::bulk_copy(uint64_t key, WarpRecord& rec, const OpDesc& desc, WarpT& w, uint32_t sm, uint64_t t,
                            Part& part) {
  if (desc.bulk_bytes_per_cycle <= 0) return;
  rec.materialize();
  std::vector<MemAccess>& global = part.async_global;
  global.clear();
  for (const MemAccess& a : rec.acc)
    if (a.space == Space::Global) global.push_back(a);
  if (global.empty()) return;
  const uint64_t done = mem_.bulk_read(sm, t, global, desc.bulk_bytes_per_cycle);
  if (!key) return;
  CtaSlot::BulkPhase& p = w.cta->bulk_phase(key);
  p.done = p.open ? std::max(p.done, done) : done;
  p.open = true;
}

// When a warp's load, store or atomic with accesses completes (a store: when it may issue on; its path
// time goes to the warp's last_done).
uint64_t TimingModel::access_time(const Instr& in, WarpRecord& rec, WarpT& w, uint32_t sm, uint64_t t) {
  const Space s = rec.space;
  uint64_t known = 0;  // a shared access or global load of a named shape the memo knows: records unread
  if (s == Space::Shared && rec.shape.key && !in.traits.cas_loop &&
      mem_.shared_named(sm, t, rec.first_addr(), rec.shape, known))
    return known;
  // the four LDG.32 of a 16x16 wmma fragment from global memory each read half its sectors (ncu: an L1 hit
  // rate of 50% at one warp per CTA, tcs_wmma_sample): its sectors pass the data stage twice
  const uint32_t passes = in.traits.sass_loads > 1 ? in.traits.sass_loads / 2 : 1;
  if (s == Space::Global && in.traits.mem == MemKind::Load && rec.shape.key &&
      mem_.load_named(sm, t, rec.first_addr(), rec.shape, !(in.flags & F_CG), passes, known))
    return known;
  rec.materialize();
  if (s == Space::Param) return t + int_latency_;
  if (s == Space::Const) return t + cfg_.const_latency;
  if (s == Space::Shared && in.traits.cas_loop)  // LDS, add, CAS, compare, branch per update
    return mem_.shared_cas_loop(sm, t, rec.acc, w.cta->cta.linear_id,
                                2 * cfg_.smem_latency + 2 * int_latency_ + branch_latency_);
  if (s == Space::Shared) return mem_.shared(sm, t, rec.acc, rec.shape, in.traits.fragment_load && in.traits.sass_loads > 1);
  if (in.traits.mem == MemKind::Atomic) return mem_.atomic(sm, t, rec.acc);
  if (in.traits.mem == MemKind::Store) {
    const uint64_t done = mem_.store(sm, t, rec.acc, rec.shape);
    w.last_done = std::max(w.last_done, done);
    return t + 1;
  }
  return mem_.load(sm, t, rec.acc, !(in.flags & F_CG), rec.shape, passes);
}

}  // namespace stc
