// The timing model's view of a GPU config: typed fields read from the flat key/value map that
// stcsim.config produces (schema, units and sources live there and in docs/configs.md).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <variant>

#include "../ptx/ir.h"

namespace stc {

using ConfigValue = std::variant<double, std::string>;
using FlatConfig = std::map<std::string, ConfigValue>;

struct UnitTiming {
  uint32_t latency = 1;
  uint32_t interval = 1;
};

struct TensorTiming {
  uint32_t latency = 1;
  uint32_t interval = 1;
};

struct TimingConfig {
  std::string name;
  double clock_mhz = 1000;
  uint32_t launch_overhead = 0;  // cycles added to every launch (gpu.launch_overhead_cycles)
  uint32_t num_sms = 1;
  uint32_t sub_cores = 4;
  bool gto = true;
  uint32_t issue_width = 1;
  // occupancy
  uint32_t max_threads = 2048, max_ctas = 32, registers = 65536, reg_alloc_unit = 256, max_regs_per_thread = 255;
  uint64_t shared_per_sm = 0, max_shared_per_cta = 0, shared_alloc_unit = 256, shared_reserved_per_cta = 0;
  // units
  std::array<UnitTiming, static_cast<size_t>(Unit::NONE) + 1> unit{};
  // tensor
  TensorTiming wmma_f32, wmma_f16, mma_k8_f32, mma_k16_f32;  // f16-accumulator mma uses the f32 timing
  TensorTiming mma_sp_k32_f32;                                 // mma.sp m16n8k32 (every type)
  bool has_mma_k8 = false, has_mma_k16 = false, has_mma_sp_k32 = false, has_cp_async = false;
  // shared memory
  uint32_t smem_banks = 32, smem_bank_bytes = 4, smem_latency = 20, smem_cycles_per_wavefront = 1,
           smem_wavefront_latency = 1;
  // L1D
  uint64_t l1_size = 32768;
  uint32_t l1_assoc = 4, l1_line = 128, l1_sector = 32, l1_latency = 28, l1_mshr = 256;
  // L2
  uint64_t l2_size = 6 << 20;
  uint32_t l2_slices = 32, l2_assoc = 16, l2_line = 128, l2_sector = 32, l2_latency = 200;
  double l2_slice_bytes_per_cycle = 32;
  // DRAM
  uint32_t dram_channels = 8, dram_latency = 400;
  double dram_bytes_per_cycle = 256;
  // interconnect
  uint32_t icnt_latency = 20;
  double icnt_bytes_per_cycle_per_sm = 32;
  uint32_t const_latency = 28;
  bool cp_async_sync = false;  // cp.async completes at issue ("sync" mode) instead of at its wait
};

// Reads every key the timing model needs; throws std::invalid_argument naming a missing or mistyped key.
TimingConfig timing_config_from(const FlatConfig& flat);

}  // namespace stc
