// The memory hierarchy's timing: coalescing into sectors, per-SM L1D (with MSHR merging), L2 slices,
// DRAM channels and the SM<->L2 interconnect, each a bandwidth-limited resource; shared-memory bank
// conflicts. Latencies are unloaded totals from the config (an L2 hit costs l2.hit_latency end to end).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "../func/state.h"
#include "cache.h"
#include "calendar.h"
#include "completions.h"
#include "distinct.h"
#include "sector_map.h"
#include "shape_memo.h"
#include "config.h"
#include "../stats.h"

namespace stc {

class MemorySystem {
 public:
  MemorySystem(const TimingConfig& cfg, Stats& stats);
  // Gives every SM's L1 `bytes` of capacity (its sets kept, its ways l1d's sets x line bytes apart) and
  // empties it: a launch's L1 is what the driver's shared carve-out leaves of the unified SRAM.
  void set_l1_bytes(uint64_t bytes);

  // Cycle at which the data of a global/local load issued at `t` on `sm` is back. `l1_allocate` false
  // bypasses L1 (ld.cg-like paths: cp.async.cg, atomics at L2). `shape`: the records' named pattern, if any
  // (WarpRecord::shape; here and below).
  // `passes`: how many times the L1's data stage reads the sectors (the SASS loads of a 16x16 wmma
  // fragment from global memory read each of its sectors twice).
  uint64_t load(uint32_t sm, uint64_t t, const std::vector<MemAccess>& acc, bool l1_allocate,
                const AccessShape& shape = {}, uint32_t passes = 1);
  // load() for a named shape from its first access's address alone, where the memo holds the shape's
  // sectors: true and `done` set; false, nothing done, on a miss (the caller then gives load() the records).
  bool load_named(uint32_t sm, uint64_t t, uint64_t first_addr, const AccessShape& shape, bool l1_allocate,
                  uint32_t passes, uint64_t& done);
  // Cycle at which the last global sector of a bulk copy (cp.async.bulk.tensor) issued at `t` on `sm` is
  // back from L2: the copy engine requests its sectors (address order) one after another at
  // `bytes_per_cycle`, each through its slice (and DRAM on a miss) as a load's, without L1, its MSHRs or the
  // SM's load return port (the copy engine's own rate, measured on one SM, is the caller's latency model).
  uint64_t bulk_read(uint32_t sm, uint64_t t, const std::vector<MemAccess>& acc, double bytes_per_cycle);
  // Cycle at which a global/local store issued at `t` has reached L2. Its sectors leave the SM through its
  // store path one after another: l1d.store_sector_cycles per sector, times the 16-byte halves of the sector
  // it writes only in part (at least one).
  uint64_t store(uint32_t sm, uint64_t t, const std::vector<MemAccess>& acc, const AccessShape& shape = {});
  // When the SM's store path takes the next store (a store waits for it to issue).
  double store_free(uint32_t sm) const { return sms_[sm].store_free; }
  // Atomic read-modify-write performed at L2; returns when the old value is back. One request per sector
  // through its slice, then the slice's atomic unit: one update round (l2.atomic_update_cycles) per lane
  // on the sector's most-updated word (distinct words share a round; same-address lanes serialise).
  uint64_t atomic(uint32_t sm, uint64_t t, const std::vector<MemAccess>& acc);
  // A shared-memory atomic lowered to a load + compare-and-swap loop, by the CTA `cta`: its iterations take
  // the SM's shared pipe (smem.cas_iteration_cycles + smem.cas_address_cycles per address updated), each
  // update holds its address for one loop round trip (`round_trip` cycles), and the updates of an address,
  // by any warp of the CTA, take turns. Returns when the warp's last update is done.
  uint64_t shared_cas_loop(uint32_t sm, uint64_t t, const std::vector<MemAccess>& acc, uint64_t cta,
                           uint32_t round_trip);
  // Shared-memory access at `t`: returns the completion cycle; counts wavefronts and conflicts.
  // `matrix_rows`: a 16x16 wmma fragment of 16-bit elements, which ptxas loads with one LDSM.x4: its 16
  // rows of two 16-byte halves are read as four 8 x 16-byte matrices, one phase each.
  uint64_t shared(uint32_t sm, uint64_t t, const std::vector<MemAccess>& acc, const AccessShape& shape = {},
                  bool matrix_rows = false);
  // shared() for a named shape from its first access's address alone, where the memo holds the shape's
  // wavefronts: true and `done` set; false, nothing done, on a miss (the caller then gives shared() the records).
  // `shape` is named (a non-zero key).
  bool shared_named(uint32_t sm, uint64_t t, uint64_t first_addr, const AccessShape& shape, uint64_t& done);
  // Outstanding L1 misses of `sm` at `t` (MSHR occupancy) and the cycle the earliest one completes.
  uint32_t mshr_in_use(uint32_t sm, uint64_t t) { return sms_[sm].outstanding.outstanding(t); }
  uint64_t mshr_next_free(uint32_t sm) { return sms_[sm].outstanding.earliest(); }
  // Dirty L2 sectors written back at the end of the kernel (counted as DRAM writes).
  void flush_stats();
  // The current cycle of `sm` (the timing model's, non-decreasing): no request that follows arrives before it.
  void set_now(uint32_t sm, uint64_t t) { local(sm).now = t; }
  // Gives the state an access writes beyond its SM's own records -- scratch, memos, the current cycle and
  // the stats it counts -- one copy per host thread: `stats[p]` where thread p counts (thread 0: the stats
  // given to the constructor). assign() says which thread runs an SM's steps from then on; threads that run
  // different SMs then share nothing there (global memory's stages run one at a time, on any copy).
  void set_threads(const std::vector<Stats*>& stats);
  void assign(uint32_t sm, uint32_t thread) { part_of_[sm] = thread; }

 private:
  struct BankResult {
    uint32_t distinct, waves;
  };
  // What an access writes beyond its SM's records, one copy per host thread (set_threads()).
  struct Local {
    Stats* st;
    uint64_t now = 0;  // set_now()
    std::vector<uint64_t> words;                       // shared_cas_loop(): the lanes' word addresses, sorted
    std::vector<uint32_t> cas_lanes;                   // shared_cas_loop(): lanes per address
    DistinctSet distinct;
    std::vector<uint64_t> bank_words;  // shared_banks_fast(): per bank, its distinct words so far
    std::vector<uint8_t> bank_count;
    ShapeMemo<BankResult> bank_memo;   // shared(): by shape at a base aligned to a bank row
    Local(Stats* stats, const TimingConfig& c);
  };
  Local& local(uint32_t sm) { return *locals_[part_of_.empty() ? 0 : part_of_[sm]]; }
  std::vector<std::unique_ptr<Local>> locals_;
  std::vector<uint32_t> part_of_;  // per SM: the thread that runs its steps (empty: all on thread 0)
  struct Sm {
    SectorCache l1;
    Calendar l1_port;    // L1/shared data port (wavefronts)
    Calendar icnt;       // response path L2 -> SM
    // sector -> data-ready cycle of an outstanding miss. A fill done by the current cycle is never waited for
    // again (every later request is ready after it): inserts pass now_ as the cycle up to which entries are dead.
    SectorMap pending;
    Completions outstanding;                         // completion cycles of its misses (MSHRs)
    double store_free = 0;                           // the store path is busy until then
    std::unordered_map<uint64_t, uint64_t> cas_free;  // (CTA, shared address) -> when its last CAS update ends
  };
  // load() once its sectors are in scratch_ (address order).
  uint64_t load_sectors(uint32_t sm, uint64_t t, bool l1_allocate, uint32_t passes);
  // Wavefronts of the L1's data stage for the sectors in scratch_ (address order), read once.
  uint32_t data_wavefronts() const;
  // Store-path cycles of a store's sectors (l1d.store_sector_cycles each, per partly written 16-byte half).
  double store_path_cycles(const std::vector<MemAccess>& acc);
  // `request_extra`: slice port cycles a read request for a line costs beyond its sectors' bytes (charged
  // with the request's first sector; l2.slice_request_cycles)
  // `to_sm` false: a read's data is not returned through the SM's port (sms_[].icnt), as a bulk copy's.
  uint64_t l2_path(uint32_t sm, uint64_t t, uint64_t sector_addr, bool write, double request_extra = 0,
                   bool to_sm = true);
  // The slice-port cycles a line's read request costs beyond its sectors' (l2.slice_request_cycles), charged
  // with the line's first sector: scratch_[i] is that first sector when its line differs from `line`
  // (which it then becomes); 0 otherwise.
  double request_extra(size_t i, uint64_t& line) const;
  uint32_t slice_of(uint64_t sector_addr);
  uint32_t dram_channel(uint64_t addr) const;
  // The bank conflicts of the records [first, last) of a shared-memory access (one phase of it) with up to
  // kBankSlots distinct words per bank, by a scan of each bank's words (no hashing): the distinct words and
  // the wavefronts. False when a bank needs more.
  bool shared_banks_fast(Local& lc, const MemAccess* first, const MemAccess* last, uint32_t& distinct,
                         uint32_t& waves);
  // The distinct words and wavefronts of the records [first, last): the fast scan, else a distinct set.
  void bank_waves(Local& lc, const MemAccess* first, const MemAccess* last, uint32_t& distinct, uint32_t& waves);
  // The wavefronts of a 16x16 fragment's four 8-row matrices (shared(), `matrix_rows`); false when its
  // records are not 32 distinct 16-byte row halves.
  bool matrix_waves(const std::vector<MemAccess>& acc, uint32_t& distinct, uint32_t& waves) const;
  // The shared access's bank-pipe time and latency for its wavefronts (and the counts of its stats).
  uint64_t shared_wavefronts(uint32_t sm, uint64_t t, uint32_t distinct, uint32_t waves);
  // The distinct L1 sectors of a warp's global/local accesses, in address order.
  void sectors_of(const std::vector<MemAccess>& acc, const AccessShape& shape, std::vector<uint64_t>& out);

  const TimingConfig& cfg_;
  Stats& st_;
  std::vector<Sm, LaunchAllocator<Sm>> sms_;
  std::vector<SectorCache, LaunchAllocator<SectorCache>> l2_;
  std::vector<SectorMap, LaunchAllocator<SectorMap>> l2_pending_;  // per slice: sector -> DRAM fill done
  std::vector<Calendar, LaunchAllocator<Calendar>> l2_port_;
  std::vector<Calendar> l2_atomic_;   // per slice: the atomic unit's update rounds
  // the GPU-wide limit on update rounds (l2.atomic_rounds_per_cycle): one calendar for all slices, or, with
  // a slice map that pairs slices into buddies, one per pair at its share (2 / slices) of the limit
  std::vector<Calendar> l2_atomic_shared_;
  std::vector<uint32_t> l2_atomic_group_;  // per slice: its calendar in l2_atomic_shared_
  double l2_atomic_share_ = 1;             // the fraction of the limit each calendar has
  std::vector<Calendar, LaunchAllocator<Calendar>> dram_;
  std::vector<uint64_t> scratch_;
  std::vector<std::pair<uint64_t, uint32_t>> store_masks_;  // store_path_cycles(): sector -> written bytes
  std::vector<uint64_t> words_;        // atomic(): the lanes' word addresses, sorted
  DistinctSet distinct_;               // sectors_of()
  static constexpr uint32_t kBankSlots = 8;
  ShapeMemo<std::vector<uint64_t>> sector_memo_;   // sectors_of(): global sectors relative to the base
  std::vector<uint64_t> rel_sectors_;
  // The line of an L2 address (a shift where l2.line_bytes is a power of two: a division per sector before).
  uint64_t l2_line_of(uint64_t addr) const { return l2_line_shift_ >= 0 ? addr >> l2_line_shift_ : addr / cfg_.l2_line; }
  int l2_line_shift_ = -1;      // log2 of l2.line_bytes (-1: not a power of two)
  int interleave_shift_ = -1;   // log2 of l2.interleave_bytes (-1: not a power of two)
  uint64_t last_unit_ = ~uint64_t{0};  // slice_of(): the last interleave unit it hashed, and its slice
  uint32_t last_slice_ = 0;
  // A sector's service cycles at its slice's port (read / write) and on the SM's response path: the
  // quotients the config fixes, computed once.
  double read_service_ = 0, write_service_ = 0, icnt_service_ = 0;
  uint64_t slices_mask_ = 0;    // l2.slices - 1 when a power of two (0: not)
  uint64_t channels_mask_ = 0;  // dram.channels - 1 when a power of two (0: not)
  int bank_shift_ = -1;               // log2 of smem.bank_width_bytes (-1: banks or width not a power of two)
};

}  // namespace stc
