// The timing model's typed record of a GPU config, read from the flat key/value map that stcsim.config
// produces (every key declared once there, with unit, default and source; derived values computed there).
// C++ holds no default and re-derives nothing: every field is read from a key, and the reader records
// what it read so Python can check the record key for key (Engine.config_record) and find declared keys
// no engine code reads.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "../ptx/ir.h"
#include "l2_slice_map.h"
#include "op_class.h"

namespace stc {

using ConfigValue = std::variant<double, std::string>;
using FlatConfig = std::map<std::string, ConfigValue>;

// Reads typed values from a flat config and records every key read (with the value as the record holds it).
// Errors are std::invalid_argument naming the key.
class ConfigReader {
 public:
  explicit ConfigReader(const FlatConfig& f) : f_(f) {}
  double num(const std::string& key);
  uint32_t u32(const std::string& key);
  uint64_t u64(const std::string& key);
  std::string str(const std::string& key);
  bool flag(const std::string& key);
  // A list of non-negative integers, written "0,8,16" (stcsim.config's `ints` kind); empty for "".
  std::vector<uint64_t> ints(const std::string& key);
  // Whether the config has the key (keys of features a GPU lacks are absent, e.g. sm_80+ ones on v100).
  bool has(const std::string& key) const { return f_.count(key) != 0; }
  const FlatConfig& read() const { return read_; }

 private:
  const ConfigValue& get(const std::string& key) const;
  const FlatConfig& f_;
  FlatConfig read_;
};

struct TimingConfig {
  std::string name;
  uint32_t launch_overhead = 0;  // cycles added to every launch (gpu.launch_overhead_cycles)
  uint32_t num_sms = 1;
  uint32_t sub_cores = 4;
  bool gto = true;
  uint32_t issue_width = 1;
  // occupancy
  uint32_t max_warps = 0, max_ctas = 0, registers = 0, reg_alloc_unit = 0, max_regs_per_thread = 0;
  uint64_t shared_per_sm = 0, max_shared_per_cta = 0, shared_alloc_unit = 0, shared_reserved_per_cta = 0;
  // The shared-memory carve-outs the driver may pick per kernel (bytes, ascending; sm.shared_carveouts_kb)
  // and the unified L1 + shared SRAM: a launch's L1 is what its carve-out leaves (empty: a fixed L1 of
  // l1d.size_bytes).
  std::vector<uint64_t> shared_carveouts;
  uint64_t unified_l1_shared = 0;
  // every timing class this config has (units, tensor shapes, extensions), by name; and why the others
  // are missing (shown when a kernel uses one)
  std::map<OpClassId, OpDesc> classes;  // by interned name (op_class_id)
  std::map<OpClassId, std::string> missing;
  uint32_t tensor_pipes = 1;     // warp-level MMA pipes per sub-core (tensor.pipes_per_subcore)
  // shared memory
  uint32_t smem_banks = 0, smem_bank_bytes = 0, smem_latency = 0, smem_cycles_per_wavefront = 0,
           smem_wavefront_latency = 0, smem_matrix_extra_latency = 0, movm_latency = 0;
  double smem_cas_iteration = 0, smem_cas_address = 0;  // shared-pipe cycles of a CAS loop iteration (64-bit words)
  double smem_cas_iteration_b32 = 0, smem_cas_address_b32 = 0;  // the same for 32-bit words
  // L1D
  uint32_t l1_sets = 0, l1_assoc = 0, l1_line = 0, l1_sector = 0, l1_latency = 0, l1_mshr = 0;
  double store_sector_cycles = 0;  // the SM's store path per sector (0: no limit)
  // L2
  uint32_t l2_sets = 0, l2_slices = 0, l2_assoc = 0, l2_line = 0, l2_sector = 0, l2_latency = 0, l2_access = 0;
  uint32_t l2_dram_fetch = 0;  // bytes read from DRAM per L2 miss (whole sectors within one line)
  bool l2_xor_sets = false;  // l2.set_index xor: the slices' set index folds every line-address bit in
  uint32_t l2_interleave = 0;  // bytes mapped to one slice before the hash moves on (whole lines)
  const L2SliceMap* l2_slice_map = nullptr;  // measured map of units to slices (l2.slice_map); null: the hash
  double l2_slice_bytes_per_cycle = 0, l2_slice_write_bytes_per_cycle = 0;
  double l2_slice_fill_bytes_per_cycle = 0;  // 0: DRAM fills take no slice-port time
  double l2_slice_request_cycles = 0;  // a read request (one line's sectors) costs the slice port at least this
  double l2_atomic_update_cycles = 0;     // per update round of one sector at the slice's atomic unit
  double l2_atomic_rounds_per_cycle = 0;  // update rounds of all slices together per cycle (GPU-wide)
  double l2_atomic_words_per_cycle = 0;   // a round's further distinct words, all slices together per cycle
  // DRAM
  uint32_t dram_channels = 0, dram_access = 0;
  double dram_bytes_per_cycle_per_channel = 0;
  // interconnect
  uint32_t icnt_latency = 0;
  double icnt_bytes_per_cycle_per_sm = 0;
  uint32_t const_latency = 0;
  // instruction fetch (icache.*; off: every instruction issues as if fetched)
  bool icache = false;
  uint32_t inst_bytes = 0, icache_line = 0, icache_l0_lines = 0, icache_l1_lines = 0, icache_l15_lines = 0;
  double icache_fill = 0, icache_l2_fill = 0, icache_dram_fill = 0;  // cycles per line filled into an L0
  bool cp_async_sync = false;  // cp.async completes at issue ("sync" mode) instead of at its wait
  FlatConfig record;           // every key read, with the value the record holds
};

// Reads every key the timing model needs; throws std::invalid_argument naming a missing or mistyped key.
TimingConfig timing_config_from(const FlatConfig& flat);

}  // namespace stc
