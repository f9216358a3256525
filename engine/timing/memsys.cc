#include "memsys.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace stc {

MemorySystem::MemorySystem(const TimingConfig& cfg, Stats& stats)
    : cfg_(cfg), st_(stats), sector_memo_(cfg.l1_sector) {
  locals_.push_back(std::make_unique<Local>(&stats, cfg));
  sms_.reserve(cfg.num_sms);
  for (uint32_t i = 0; i < cfg.num_sms; ++i)
    sms_.push_back(Sm{SectorCache(cfg.l1_sets, cfg.l1_assoc, cfg.l1_line, cfg.l1_sector), Calendar(), Calendar(), {}, {}, 0, {}});
  for (uint32_t i = 0; i < cfg.l2_slices; ++i) l2_.emplace_back(cfg.l2_sets, cfg.l2_assoc, cfg.l2_line, cfg.l2_sector, cfg.l2_xor_sets);
  l2_port_.resize(cfg.l2_slices);
  l2_atomic_.resize(cfg.l2_slices);
  l2_atomic_group_.assign(cfg.l2_slices, 0);
  if (cfg.l2_slice_map && cfg.l2_slice_map->buddy) {  // one calendar per buddy pair
    uint32_t pairs = 0;
    std::vector<int64_t> pair_of(cfg.l2_slices, -1);
    for (uint32_t s = 0; s < cfg.l2_slices; ++s) {
      const uint32_t b = cfg.l2_slice_map->buddy[s];
      if (pair_of[s] < 0) pair_of[s] = pair_of[b] = pairs++;
      l2_atomic_group_[s] = static_cast<uint32_t>(pair_of[s]);
    }
    l2_atomic_share_ = 2.0 / cfg.l2_slices;
    l2_atomic_shared_.resize(pairs);
  } else {
    l2_atomic_shared_.resize(1);
  }
  l2_pending_.resize(cfg.l2_slices);
  dram_.resize(cfg.dram_channels);
  const auto pow2 = [](uint32_t v) { return v && !(v & (v - 1)); };
  if (pow2(cfg.smem_banks) && pow2(cfg.smem_bank_bytes)) bank_shift_ = __builtin_ctz(cfg.smem_bank_bytes);
  if (pow2(cfg.l2_slices)) slices_mask_ = cfg.l2_slices - 1;
  if (pow2(cfg.l2_line)) l2_line_shift_ = __builtin_ctz(cfg.l2_line);
  if (pow2(cfg.l2_interleave)) interleave_shift_ = __builtin_ctz(cfg.l2_interleave);
  read_service_ = cfg.l2_sector / cfg.l2_slice_bytes_per_cycle;
  write_service_ = cfg.l2_sector / cfg.l2_slice_write_bytes_per_cycle;
  icnt_service_ = cfg.l2_sector / cfg.icnt_bytes_per_cycle_per_sm;
  if (pow2(cfg.dram_channels)) channels_mask_ = cfg.dram_channels - 1;
}

void MemorySystem::set_l1_bytes(uint64_t bytes) {
  const TimingConfig& c = cfg_;
  const uint64_t way_bytes = static_cast<uint64_t>(c.l1_sets) * c.l1_line;
  const uint32_t ways = static_cast<uint32_t>(std::max<uint64_t>(1, bytes / way_bytes));
  for (Sm& s : sms_) s.l1 = SectorCache(c.l1_sets, ways, c.l1_line, c.l1_sector);
}

MemorySystem::Local::Local(Stats* stats, const TimingConfig& c)
    : st(stats), bank_words(static_cast<size_t>(c.smem_banks) * kBankSlots), bank_count(c.smem_banks),
      bank_memo(uint64_t{c.smem_banks} * c.smem_bank_bytes) {}

void MemorySystem::set_threads(const std::vector<Stats*>& stats) {
  part_of_.assign(sms_.size(), 0);
  locals_.resize(1);
  for (size_t p = 1; p < stats.size(); ++p) locals_.push_back(std::make_unique<Local>(stats[p], cfg_));
}

void MemorySystem::sectors_of(const std::vector<MemAccess>& acc, const AccessShape& shape, std::vector<uint64_t>& out) {
  out.clear();
  if (acc.empty()) return;
  // Global sectors move with their addresses: a shape seen before at another sector-aligned base has the
  // same sectors, moved.
  const uint64_t sector = cfg_.l1_sector;
  const uint64_t base = sector_memo_.base(acc);
  if (const std::vector<uint64_t>* rel = sector_memo_.find(acc, base, shape)) {
    for (uint64_t r : *rel) out.push_back(base + r);
    return;
  }
  distinct_.clear();
  auto add = [&](uint64_t s) {
    if (distinct_.insert(s)) out.push_back(s);
  };
  bool global_only = true;
  for (const auto& a : acc) {
    if (a.space == Space::Global) {
      for (uint64_t s = a.addr / sector; s <= (a.addr + a.size - 1) / sector; ++s) add(s * sector);
    } else if (a.space == Space::Local) {
      // Local memory is per thread and interleaved by lane: 4-byte word w of lane l lives at w * 128 + 4 * l
      // of a private region, so a warp's accesses to the same local word are contiguous.
      global_only = false;
      for (uint64_t w = a.addr / 4; w <= (a.addr + a.size - 1) / 4; ++w)
        add(((uint64_t{1} << 62) + w * 128 + a.lane * 4u) / sector * sector);
    }
  }
  std::sort(out.begin(), out.end());  // address order: the order the sectors are requested in
  if (global_only) {  // local sectors depend on the lane and the word, not on the base: not stored
    rel_sectors_.clear();
    for (uint64_t s : out) rel_sectors_.push_back(s - base);
    sector_memo_.store(acc, base, rel_sectors_);
  }
}

uint32_t MemorySystem::dram_channel(uint64_t addr) const {
  const uint64_t h = (addr / 256) ^ (addr >> 14);
  return static_cast<uint32_t>(channels_mask_ ? h & channels_mask_ : h % cfg_.dram_channels);
}

uint32_t MemorySystem::slice_of(uint64_t sector_addr) {
  if (cfg_.l2_slice_map) return cfg_.l2_slice_map->slice(sector_addr);
  // Without a measured map: a mixing hash of the interleave unit. It spreads a long stream evenly but a small
  // contiguous range as balls fall into bins (16 units on about 14 slices, the busiest holding 2-3), where
  // the H100's measured map keeps a 16 KiB range to at most 2 units per slice at most offsets.
  uint64_t unit = interleave_shift_ >= 0 ? sector_addr >> interleave_shift_ : sector_addr / cfg_.l2_interleave;
  if (unit == last_unit_) return last_slice_;  // a line's sectors come one after another: hashed once
  last_unit_ = unit;
  unit = (unit ^ (unit >> 30)) * 0xbf58476d1ce4e5b9ULL;
  unit = (unit ^ (unit >> 27)) * 0x94d049bb133111ebULL;
  unit ^= unit >> 31;
  last_slice_ = static_cast<uint32_t>(slices_mask_ ? unit & slices_mask_ : unit % cfg_.l2_slices);
  return last_slice_;
}

uint64_t MemorySystem::l2_path(uint32_t sm, uint64_t t, uint64_t sector_addr, bool write, double request_extra,
                              bool to_sm) {
  const TimingConfig& c = cfg_;
  const uint32_t slice = slice_of(sector_addr);
  const double arrive = static_cast<double>(t) + c.icnt_latency;
  const double start = l2_port_[slice].reserve(arrive, (write ? write_service_ : read_service_) + request_extra, local(sm).now);
  const SectorCache::Result r = l2_[slice].access(sector_addr, write, true);
  const double per_channel = c.dram_bytes_per_cycle_per_channel;
  if (r.writeback_sectors) {  // dirty victim written back: DRAM write bandwidth on the victim's channel
    const double bytes = static_cast<double>(r.writeback_sectors) * c.l2_sector;
    st_[TStat::DramWrite] += bytes;
    dram_[dram_channel(r.victim_addr)].reserve(start, bytes / per_channel, local(sm).now);
  }
  auto& pending = l2_pending_[slice];
  double ready;
  if (r.hit || write) {
    if (r.hit) st_[TStat::L2Hits] += 1;
    else st_[TStat::L2Misses] += 1;
    // the slice's access cycles, then the trip back and the L1 fill (an uncontended hit: l2.hit_latency)
    ready = start + c.l2_access + c.icnt_latency + c.l1_latency;
    if (!write) {  // a hit on a sector whose DRAM fill is still in flight waits for the fill
      const uint64_t* fill = pending.find(sector_addr);
      if (fill && static_cast<double>(*fill) > ready) ready = static_cast<double>(*fill);
    }
  } else {
    // DRAM is read in blocks of l2.dram_fetch_bytes (whole sectors of the line): the block's other sectors
    // are filled with the missing one, so a scattered sector costs the block while a stream pays once.
    st_[TStat::L2Misses] += 1;
    st_[TStat::DramRead] += c.l2_dram_fetch;
    const double dstart = dram_[dram_channel(sector_addr)].reserve(start, c.l2_dram_fetch / per_channel, local(sm).now);
    // DRAM's extra cycles; the block is written into the slice through its port
    // (l2.slice_fill_bytes_per_cycle), then as a hit (an uncontended miss: dram.latency)
    double filled_at = dstart + c.dram_access;
    if (c.l2_slice_fill_bytes_per_cycle > 0)
      filled_at = l2_port_[slice].reserve(filled_at, c.l2_dram_fetch / c.l2_slice_fill_bytes_per_cycle, local(sm).now);
    ready = filled_at + c.l2_access + c.icnt_latency + c.l1_latency;
    const uint64_t filled = static_cast<uint64_t>(std::ceil(ready));
    pending.set(sector_addr, filled, local(sm).now);
    const uint64_t block = sector_addr / c.l2_dram_fetch * c.l2_dram_fetch;
    for (uint64_t s = block; s < block + c.l2_dram_fetch; s += c.l2_sector)
      if (s != sector_addr && !l2_[slice].access(s, false, true).hit) pending.set(s, filled, local(sm).now);
  }
  if (write) return static_cast<uint64_t>(std::ceil(start));
  if (!to_sm) return static_cast<uint64_t>(std::ceil(ready));
  const double back = sms_[sm].icnt.reserve(ready, icnt_service_, local(sm).now);
  return static_cast<uint64_t>(std::ceil(back));
}

uint64_t MemorySystem::load(uint32_t sm, uint64_t t, const std::vector<MemAccess>& acc, bool l1_allocate,
                           const AccessShape& shape, uint32_t passes) {
  sectors_of(acc, shape, scratch_);
  return load_sectors(sm, t, l1_allocate, passes);
}

bool MemorySystem::load_named(uint32_t sm, uint64_t t, uint64_t first_addr, const AccessShape& shape,
                              bool l1_allocate, uint32_t passes, uint64_t& done) {
  const std::vector<uint64_t>* rel = sector_memo_.find(shape, first_addr);
  if (!rel) return false;
  const uint64_t base = sector_memo_.base(first_addr);
  scratch_.clear();
  for (uint64_t r : *rel) scratch_.push_back(base + r);
  done = load_sectors(sm, t, l1_allocate, passes);
  return true;
}

// The L1's data stage reads one sector of each of a line's sector slots per wavefront (a 128-byte line,
// four 32-byte slots): sectors of different lines in the same slot take a wavefront each. Measured with
// ncu (l1tex__data_pipe_lsu_wavefronts per request, benchmarks/calibration/run_l1_metrics.sh,
// results/reference/h100_l1_metrics.csv): a warp's 32 lanes 128 bytes apart (one slot, 32 lines) 35 per
// request, a coalesced 512 bytes 4, 8 rows of 16 bytes 512 bytes apart (tcs_mmasp_gmem) 7.9, 8 rows 32
// bytes apart (two lines, every slot twice; tcs_chain_wmma_gmem) 2.5, random lanes (gather) 8.6.
uint32_t MemorySystem::data_wavefronts() const {
  const TimingConfig& c = cfg_;
  const uint32_t slots = std::max(1u, c.l1_line / c.l1_sector);
  uint32_t in_slot[16] = {}, most = 0;
  for (uint64_t sec : scratch_) most = std::max(most, ++in_slot[(sec / c.l1_sector) % slots % 16]);
  const double per_wave = static_cast<double>(c.smem_banks * c.smem_bank_bytes) / c.l1_sector;  // sectors/cycle
  return std::max(most, static_cast<uint32_t>(std::ceil(static_cast<double>(scratch_.size()) / per_wave)));
}

uint64_t MemorySystem::load_sectors(uint32_t sm, uint64_t t, bool l1_allocate, uint32_t passes) {
  const TimingConfig& c = cfg_;
  Sm& s = sms_[sm];
  st_[TStat::GlobalLoadSectors] += static_cast<double>(scratch_.size());
  const double waves = static_cast<double>(data_wavefronts()) * passes;
  const double start = s.l1_port.reserve(static_cast<double>(t), waves * c.smem_cycles_per_wavefront, local(sm).now);
  const uint64_t t0 = static_cast<uint64_t>(std::ceil(start));
  uint64_t done = t0 + c.l1_latency;
  uint64_t request_line = ~uint64_t{0};
  for (size_t i = 0; i < scratch_.size(); ++i) {
    const uint64_t sec = scratch_[i];
    // A sector allocated by an earlier miss whose data is still on its way is an MSHR hit: it waits for it.
    SectorMap::Slot* slot = s.pending.probe(sec);  // (a miss below stores its fill there)
    const uint64_t* fill = slot && slot->key == sec ? &slot->value : nullptr;
    if (fill && *fill > t0) {
      st_[TStat::L1Misses] += 1;
      if (l1_allocate) s.l1.access(sec, false, true);  // keep LRU order
      done = std::max(done, *fill);
      continue;
    }
    const SectorCache::Result r = l1_allocate ? s.l1.access(sec, false, true) : SectorCache::Result{};
    if (r.hit) {
      st_[TStat::L1Hits] += 1;
      continue;
    }
    st_[TStat::L1Misses] += 1;
    const uint64_t ready = l2_path(sm, t0, sec, false, request_extra(i, request_line));
    if (l1_allocate) s.pending.set_at(slot, sec, ready, local(sm).now);
    s.outstanding.add(ready);
    done = std::max(done, ready);
  }
  return done;
}

// A warp's sectors of one line are one request to its slice: a request costs the port at least
// l2.slice_request_cycles, whatever few sectors it carries (a scattered sector pays the request).
double MemorySystem::request_extra(size_t i, uint64_t& line) const {
  const uint64_t l = l2_line_of(scratch_[i]);
  if (l == line) return 0;
  line = l;
  size_t n = i + 1;
  while (n < scratch_.size() && l2_line_of(scratch_[n]) == line) ++n;
  return std::max(0.0, cfg_.l2_slice_request_cycles - static_cast<double>(n - i) * read_service_);
}

uint64_t MemorySystem::bulk_read(uint32_t sm, uint64_t t, const std::vector<MemAccess>& acc, double bytes_per_cycle) {
  sectors_of(acc, {}, scratch_);
  st_[TStat::BulkCopySectors] += static_cast<double>(scratch_.size());
  const double per_sector = static_cast<double>(cfg_.l1_sector) / bytes_per_cycle;
  uint64_t done = t, request_line = ~uint64_t{0};
  for (size_t i = 0; i < scratch_.size(); ++i) {
    const uint64_t at = t + static_cast<uint64_t>(static_cast<double>(i) * per_sector);
    done = std::max(done, l2_path(sm, at, scratch_[i], false, request_extra(i, request_line), false));
  }
  return done;
}

double MemorySystem::store_path_cycles(const std::vector<MemAccess>& acc) {
  const uint64_t sector = cfg_.l1_sector;
  store_masks_.clear();
  double cycles = 0;
  for (const auto& a : acc) {
    if (a.space != Space::Global) {  // local memory: lanes interleaved, whole sectors
      cycles += cfg_.store_sector_cycles * ((a.size + sector - 1) / sector);
      continue;
    }
    for (uint64_t b = a.addr; b < a.addr + a.size;) {  // the bytes it writes in each sector
      const uint64_t sec = b / sector * sector, end = std::min(a.addr + a.size, sec + sector);
      const uint32_t bits = static_cast<uint32_t>(end - b) >= 32 ? ~0u : ((1u << (end - b)) - 1) << (b - sec);
      auto it = std::find_if(store_masks_.begin(), store_masks_.end(), [&](const auto& m) { return m.first == sec; });
      if (it == store_masks_.end()) store_masks_.emplace_back(sec, bits);
      else it->second |= bits;
      b = end;
    }
  }
  for (const auto& [sec, mask] : store_masks_) {
    int partial = 0;
    for (const uint32_t half : {mask & 0xffffu, mask >> 16}) partial += half != 0 && half != 0xffffu;
    cycles += cfg_.store_sector_cycles * std::max(1, partial);
  }
  return cycles;
}

uint64_t MemorySystem::store(uint32_t sm, uint64_t t, const std::vector<MemAccess>& acc, const AccessShape& shape) {
  const TimingConfig& c = cfg_;
  Sm& s = sms_[sm];
  sectors_of(acc, shape, scratch_);
  st_[TStat::GlobalStoreSectors] += static_cast<double>(scratch_.size());
  double from = static_cast<double>(t);
  if (c.store_sector_cycles > 0) {  // the store path: its sectors leave the SM one after another
    from = std::max(from, s.store_free);
    s.store_free = from + store_path_cycles(acc);
  }
  const double per_wave = static_cast<double>(c.smem_banks * c.smem_bank_bytes) / c.l1_sector;
  const double start = s.l1_port.reserve(from, std::ceil(scratch_.size() / per_wave) * c.smem_cycles_per_wavefront, local(sm).now);
  const uint64_t t0 = static_cast<uint64_t>(std::ceil(start));
  uint64_t done = t0;
  for (uint64_t sec : scratch_) {
    s.l1.invalidate(sec);  // write-through, write-evict L1
    done = std::max(done, l2_path(sm, t0, sec, true));
  }
  return done;
}

uint64_t MemorySystem::atomic(uint32_t sm, uint64_t t, const std::vector<MemAccess>& acc) {
  const TimingConfig& c = cfg_;
  words_.clear();
  for (const auto& a : acc) {
    if (a.space != Space::Global) continue;
    sms_[sm].l1.invalidate(a.addr);
    words_.push_back(a.addr);
  }
  std::sort(words_.begin(), words_.end());
  uint64_t done = t + c.l2_latency;
  // Sorted addresses: each sector's lanes are one run, each word's lanes a run inside it.
  for (size_t i = 0; i < words_.size();) {
    const uint64_t sector = words_[i] / c.l2_sector * c.l2_sector;
    uint32_t rounds = 0, words = 0;
    while (i < words_.size() && words_[i] / c.l2_sector * c.l2_sector == sector) {
      size_t j = i;
      while (j < words_.size() && words_[j] == words_[i]) ++j;
      rounds = std::max(rounds, static_cast<uint32_t>(j - i));
      ++words;
      i = j;
    }
    const uint64_t ready = l2_path(sm, t, sector, false);
    const double arrive = static_cast<double>(t) + c.icnt_latency;
    const double busy = rounds * c.l2_atomic_update_cycles;
    const uint32_t slice = slice_of(sector);
    const double shared = (rounds / c.l2_atomic_rounds_per_cycle + (words - 1) / c.l2_atomic_words_per_cycle) /
                          l2_atomic_share_;
    const double start = std::max(l2_atomic_[slice].reserve(arrive, busy, local(sm).now),
                                  l2_atomic_shared_[l2_atomic_group_[slice]].reserve(arrive, shared, local(sm).now));
    // unloaded: l2.hit_latency plus the rounds; queued behind other updates of the slice (or of its pair, or
    // of all slices): later
    const double updated = start + busy + (c.l2_latency - c.icnt_latency);
    done = std::max({done, ready, static_cast<uint64_t>(std::ceil(updated))});
  }
  return done;
}

uint64_t MemorySystem::shared_cas_loop(uint32_t sm, uint64_t t, const std::vector<MemAccess>& acc, uint64_t cta,
                                       uint32_t round_trip) {
  uint64_t done = shared(sm, t, acc);  // the first load's wavefronts
  Local& lc = local(sm);
  std::vector<uint64_t>& words = lc.words;
  words.clear();
  for (const auto& a : acc)
    if (a.space == Space::Shared) words.push_back(a.addr);
  std::sort(words.begin(), words.end());
  // The loop's iterations on the SM's shared pipe: iteration i updates every address that still has an i-th
  // lane (cas_iteration_cycles + cas_address_cycles per such address; the _b32 keys for 32-bit words).
  std::vector<uint32_t>& lanes = lc.cas_lanes;
  lanes.clear();
  for (size_t i = 0; i < words.size();) {
    size_t j = i;
    while (j < words.size() && words[j] == words[i]) ++j;
    lanes.push_back(static_cast<uint32_t>(j - i));
    i = j;
  }
  double pipe = 0;
  const bool narrow = std::all_of(acc.begin(), acc.end(), [](const MemAccess& a) { return a.size <= 4; });
  const double iteration = narrow ? cfg_.smem_cas_iteration_b32 : cfg_.smem_cas_iteration;
  const double per_address = narrow ? cfg_.smem_cas_address_b32 : cfg_.smem_cas_address;
  const uint32_t rounds = lanes.empty() ? 0 : *std::max_element(lanes.begin(), lanes.end());
  for (uint32_t r = 1; r <= rounds; ++r) {
    const auto pending = std::count_if(lanes.begin(), lanes.end(), [r](uint32_t n) { return n >= r; });
    pipe += iteration + per_address * static_cast<double>(pending);
  }
  const double start = sms_[sm].l1_port.reserve(static_cast<double>(t), pipe, local(sm).now);
  done = std::max(done, static_cast<uint64_t>(std::ceil(start + pipe)) + cfg_.smem_latency);
  // (per SM: an entry is dropped once the SM is past it, which no later request of its CTAs can see)
  auto& cas_free = sms_[sm].cas_free;
  if (cas_free.size() > 4096)
    for (auto it = cas_free.begin(); it != cas_free.end();) it = it->second < t ? cas_free.erase(it) : std::next(it);
  for (size_t i = 0; i < words.size();) {
    size_t j = i;
    while (j < words.size() && words[j] == words[i]) ++j;
    uint64_t& free = cas_free[cta << 32 | words[i]];
    // another warp's updates of the word still in flight: each of this warp's first attempts read a value
    // they change, fails, and takes one more loop round trip
    const uint64_t attempts = free > t ? 2 : 1;
    free = std::max(free, t) + (j - i) * attempts * uint64_t{round_trip};
    done = std::max(done, free);
    i = j;
  }
  return done;
}

uint64_t MemorySystem::shared(uint32_t sm, uint64_t t, const std::vector<MemAccess>& acc, const AccessShape& shape,
                              bool matrix_rows) {
  Local& lc = local(sm);
  uint32_t distinct = 0, waves = 0;
  // Banks repeat every banks x width bytes: the same shape at another such base conflicts alike.
  const bool memo = bank_shift_ >= 0 && !acc.empty();
  const uint64_t base = memo ? lc.bank_memo.base(acc) : 0;
  const BankResult* hit = memo ? lc.bank_memo.find(acc, base, shape) : nullptr;
  if (hit) {
    distinct = hit->distinct;
    waves = hit->waves;
  } else if (!(matrix_rows && matrix_waves(acc, distinct, waves))) {
    // A warp's 64-bit accesses are served half a warp at a time, its 128-bit ones (and ldmatrix's row
    // addresses, 16 bytes a lane) a quarter warp at a time, lanes that share an address in different quarters
    // too: the phases' wavefronts add up (ncu l1tex__data_pipe_lsu_wavefronts, results/reference/
    // h100_l1_metrics.csv: tcs_wgmma_1wg's STS.128 of 8 lanes 128 bytes apart conflict 8 ways in each quarter;
    // the SIMT GEMM's broadcast LDS.128 of its A and B fragments take 4 wavefronts each: silicon 330 K in all
    // at 256^3, this rule 336 K shared + 16 K global, merging addresses across quarters 139 K + 16 K).
    uint32_t widest = 0;
    for (const auto& a : acc) widest = std::max<uint32_t>(widest, a.size);
    const uint32_t phase_lanes = widest > 8 ? 8 : widest > 4 ? 16 : 32;
    const MemAccess* end = acc.data() + acc.size();
    for (const MemAccess* first = acc.data(); first != end;) {
      const MemAccess* last = first;
      while (last != end && last->lane / phase_lanes == first->lane / phase_lanes) ++last;
      uint32_t d = 0, w = 0;
      bank_waves(lc, first, last, d, w);
      distinct += d;
      waves += w;
      first = last;
    }
  }
  if (memo && !hit) lc.bank_memo.store(acc, base, {distinct, waves});
  return shared_wavefronts(sm, t, distinct, waves);
}

// The fragment's 16 rows lie in memory as 16 runs of 32 bytes (its 32 distinct 16-byte halves in address
// order: row i / 2, half i % 2, whatever its layout and leading dimension); LDSM.x4 reads rows 0-7 and 8-15
// of each half as one matrix, 8 row addresses per phase (tcs_chain_wmma_smem: 16 wavefronts per k-step of
// two fragments with rows 32 bytes apart, ncu, results/reference/h100_l1_metrics.csv).
bool MemorySystem::matrix_waves(const std::vector<MemAccess>& acc, uint32_t& distinct, uint32_t& waves) const {
  const TimingConfig& c = cfg_;
  uint64_t halves[32];
  size_t n = 0;
  for (const auto& a : acc) {
    if (a.space != Space::Shared) continue;
    for (uint64_t h = a.addr / 16; h <= (a.addr + a.size - 1) / 16; ++h) {
      if (std::find(halves, halves + n, h) != halves + n) continue;
      if (n == 32) return false;
      halves[n++] = h;
    }
  }
  if (n != 32) return false;
  std::sort(halves, halves + n);
  distinct = 0;
  waves = 0;
  for (uint32_t m = 0; m < 4; ++m) {  // matrix m: rows 8 (m / 2) .. + 7, half m % 2
    uint32_t per_bank[64] = {}, most = 0;
    for (uint32_t r = 8 * (m / 2); r < 8 * (m / 2) + 8; ++r) {
      const uint64_t h = halves[2 * r + m % 2];
      for (uint64_t w = h * 16 / c.smem_bank_bytes; w < (h + 1) * 16 / c.smem_bank_bytes; ++w)
        most = std::max(most, ++per_bank[w % c.smem_banks % 64]);
    }
    distinct += 16 / c.smem_bank_bytes * 8;
    waves += most;
  }
  return true;
}

void MemorySystem::bank_waves(Local& lc, const MemAccess* first, const MemAccess* last, uint32_t& distinct,
                              uint32_t& waves) {
  if (shared_banks_fast(lc, first, last, distinct, waves)) return;
  // a bank with more distinct words than the fast path holds
  const TimingConfig& c = cfg_;
  lc.distinct.clear();
  uint32_t per_bank[256] = {};
  waves = 0;
  for (const MemAccess* a = first; a != last; ++a) {
    if (a->space != Space::Shared) continue;
    for (uint64_t w = a->addr / c.smem_bank_bytes; w <= (a->addr + a->size - 1) / c.smem_bank_bytes; ++w)
      if (lc.distinct.insert(w)) waves = std::max(waves, ++per_bank[w % c.smem_banks]);
  }
  distinct = lc.distinct.size();
}

bool MemorySystem::shared_named(uint32_t sm, uint64_t t, uint64_t first_addr, const AccessShape& shape,
                                uint64_t& done) {
  if (bank_shift_ < 0) return false;
  const BankResult* hit = local(sm).bank_memo.find(shape, first_addr);
  if (!hit) return false;
  done = shared_wavefronts(sm, t, hit->distinct, hit->waves);
  return true;
}

uint64_t MemorySystem::shared_wavefronts(uint32_t sm, uint64_t t, uint32_t distinct, uint32_t waves) {
  const TimingConfig& c = cfg_;
  const uint64_t bytes = uint64_t{distinct} * c.smem_bank_bytes;
  const uint32_t ideal = static_cast<uint32_t>((bytes + c.smem_banks * c.smem_bank_bytes - 1) / (c.smem_banks * c.smem_bank_bytes));
  if (waves == 0) waves = 1;
  Stats& st = *local(sm).st;
  st[TStat::SmemAccesses] += 1;
  st[TStat::SmemWavefronts] += waves;
  st[TStat::SmemBankConflicts] += waves - std::min(waves, std::max(1u, ideal));
  const double start = sms_[sm].l1_port.reserve(static_cast<double>(t), static_cast<double>(waves) * c.smem_cycles_per_wavefront, local(sm).now);
  return static_cast<uint64_t>(std::ceil(start)) + c.smem_latency + (waves - 1) * c.smem_wavefront_latency;
}

bool MemorySystem::shared_banks_fast(Local& lc, const MemAccess* first, const MemAccess* last, uint32_t& distinct,
                                     uint32_t& waves) {
  const TimingConfig& c = cfg_;
  if (bank_shift_ < 0) return false;  // bank count or width not a power of two
  const uint32_t mask = c.smem_banks - 1;
  std::fill(lc.bank_count.begin(), lc.bank_count.end(), uint8_t{0});
  distinct = 0;
  waves = 0;
  for (const MemAccess* a = first; a != last; ++a) {
    if (a->space != Space::Shared) continue;
    const uint64_t end = (a->addr + a->size - 1) >> bank_shift_;
    for (uint64_t w = a->addr >> bank_shift_; w <= end; ++w) {
      const uint32_t b = static_cast<uint32_t>(w) & mask;
      uint64_t* words = &lc.bank_words[static_cast<size_t>(b) * kBankSlots];
      uint8_t& n = lc.bank_count[b];
      bool seen = false;
      for (uint32_t i = 0; i < n && !seen; ++i) seen = words[i] == w;
      if (seen) continue;
      if (n == kBankSlots) return false;
      words[n++] = w;
      ++distinct;
      waves = std::max<uint32_t>(waves, n);
    }
  }
  return true;
}

void MemorySystem::flush_stats() {
  uint64_t dirty = 0;
  for (const auto& s : l2_) dirty += s.dirty_sectors();
  st_[TStat::DramWrite] += static_cast<double>(dirty) * cfg_.l2_sector;
}

}  // namespace stc
