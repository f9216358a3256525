#include "config.h"

#include <cmath>
#include <stdexcept>

namespace stc {

namespace {

class Reader {
 public:
  explicit Reader(const FlatConfig& f) : f_(f) {}
  double num(const std::string& key) const {
    auto it = f_.find(key);
    if (it == f_.end()) throw std::invalid_argument("GPU config is missing key '" + key + "' (needed by the timing model)");
    if (!std::holds_alternative<double>(it->second))
      throw std::invalid_argument("GPU config key '" + key + "' must be a number");
    return std::get<double>(it->second);
  }
  double num_or(const std::string& key, double dflt) const { return f_.count(key) ? num(key) : dflt; }
  uint32_t u32(const std::string& key) const {
    const double v = num(key);
    if (v < 0 || v != std::floor(v)) throw std::invalid_argument("GPU config key '" + key + "' must be a non-negative integer");
    return static_cast<uint32_t>(v);
  }
  uint32_t u32_or(const std::string& key, uint32_t dflt) const { return f_.count(key) ? u32(key) : dflt; }
  std::string str(const std::string& key) const {
    auto it = f_.find(key);
    if (it == f_.end()) throw std::invalid_argument("GPU config is missing key '" + key + "' (needed by the timing model)");
    if (!std::holds_alternative<std::string>(it->second))
      throw std::invalid_argument("GPU config key '" + key + "' must be a string");
    return std::get<std::string>(it->second);
  }
  bool has(const std::string& key) const { return f_.count(key) != 0; }

 private:
  const FlatConfig& f_;
};

TensorTiming tensor(const Reader& r, const std::string& base, const TensorTiming* fallback) {
  TensorTiming t;
  if (!r.has(base + ".latency") && !r.has(base + ".sets") && fallback) return *fallback;
  if (r.has(base + ".latency")) t.latency = r.u32(base + ".latency");
  else t.latency = r.u32(base + ".sets") * (r.u32(base + ".fetch_cycles") + r.u32(base + ".compute_cycles"));
  t.interval = r.u32(base + ".issue_interval");
  return t;
}

}  // namespace

TimingConfig timing_config_from(const FlatConfig& flat) {
  const Reader r(flat);
  TimingConfig c;
  c.name = r.has("gpu.name") ? r.str("gpu.name") : "gpu";
  c.clock_mhz = r.num("gpu.core_clock_mhz");
  c.launch_overhead = r.u32_or("gpu.launch_overhead_cycles", 0);
  c.num_sms = r.has("gpu.num_sms") ? r.u32("gpu.num_sms") : r.u32("gpu.n_clusters") * r.u32("gpu.n_cores_per_cluster");
  c.sub_cores = r.u32("sm.sub_cores");
  const std::string pol = r.str("sched.policy");
  if (pol != "gto" && pol != "lrr") throw std::invalid_argument("GPU config key 'sched.policy' must be gto or lrr, got '" + pol + "'");
  c.gto = pol == "gto";
  c.issue_width = r.u32_or("sched.issue_width", 1);
  c.max_threads = r.u32("sm.max_threads");
  c.max_ctas = r.u32("sm.max_ctas");
  c.registers = r.u32("sm.registers");
  c.reg_alloc_unit = r.u32("sm.register_alloc_unit");
  c.max_regs_per_thread = r.u32("sm.max_registers_per_thread");
  c.shared_per_sm = r.u32("sm.shared_mem_bytes");
  c.max_shared_per_cta = r.u32("sm.max_shared_per_cta_bytes");
  c.shared_alloc_unit = r.u32("sm.shared_alloc_unit_bytes");
  c.shared_reserved_per_cta = r.u32_or("sm.shared_reserved_per_cta_bytes", 0);
  auto unit = [&](Unit u, const std::string& key, bool has_latency) {
    UnitTiming& t = c.unit[static_cast<size_t>(u)];
    t.latency = has_latency ? r.u32("units." + key + ".latency") : 1;
    t.interval = r.u32("units." + key + ".issue_interval");
  };
  unit(Unit::INT, "int", true);
  unit(Unit::FP32, "fp32", true);
  unit(Unit::FP16, "fp16", true);
  unit(Unit::FP64, "fp64", true);
  unit(Unit::SFU, "sfu", true);
  unit(Unit::BRANCH, "branch", true);
  unit(Unit::LDST, "ldst", false);
  c.unit[static_cast<size_t>(Unit::SYNC)] = {1, 1};
  c.unit[static_cast<size_t>(Unit::NONE)] = {1, 1};
  c.wmma_f32 = tensor(r, "tensor.wmma_m16n16k16_f32", nullptr);
  c.wmma_f16 = tensor(r, "tensor.wmma_m16n16k16_f16", &c.wmma_f32);
  // mma.sync, mma.sp and cp.async exist on sm_80+ configs only; a kernel using them on another config is refused.
  c.has_mma_k16 = r.has("tensor.mma_m16n8k16_f32.latency");
  c.has_mma_k8 = r.has("tensor.mma_m16n8k8_f32.latency");
  c.has_mma_sp_k32 = r.has("tensor.mma_sp_m16n8k32_f32.latency");
  c.has_cp_async = r.has("cp_async.mode");
  if (c.has_mma_k16) c.mma_k16_f32 = tensor(r, "tensor.mma_m16n8k16_f32", nullptr);
  if (c.has_mma_k8) c.mma_k8_f32 = tensor(r, "tensor.mma_m16n8k8_f32", nullptr);
  if (c.has_mma_sp_k32) c.mma_sp_k32_f32 = tensor(r, "tensor.mma_sp_m16n8k32_f32", nullptr);
  c.smem_banks = r.u32("smem.banks");
  if (c.smem_banks == 0 || c.smem_banks > 256) throw std::invalid_argument("GPU config key 'smem.banks' must be in [1, 256]");
  c.smem_bank_bytes = r.u32("smem.bank_width_bytes");
  c.smem_latency = r.u32("smem.latency");
  c.smem_cycles_per_wavefront = r.u32("smem.cycles_per_wavefront");
  c.smem_wavefront_latency = r.u32_or("smem.wavefront_latency", c.smem_cycles_per_wavefront);
  c.l1_size = r.u32("l1d.size_bytes");
  c.l1_assoc = r.u32("l1d.assoc");
  c.l1_line = r.u32("l1d.line_bytes");
  c.l1_sector = r.u32("l1d.sector_bytes");
  c.l1_latency = r.u32("l1d.hit_latency");
  c.l1_mshr = r.u32("l1d.mshr_entries");
  c.l2_size = static_cast<uint64_t>(r.num("l2.size_bytes"));
  c.l2_slices = r.u32("l2.slices");
  c.l2_assoc = r.u32("l2.assoc");
  c.l2_line = r.u32("l2.line_bytes");
  c.l2_sector = r.u32("l2.sector_bytes");
  c.l2_latency = r.u32("l2.hit_latency");
  c.l2_slice_bytes_per_cycle = r.num("l2.slice_bytes_per_cycle");
  c.dram_channels = r.u32("dram.channels");
  c.dram_latency = r.u32("dram.latency");
  c.dram_bytes_per_cycle = r.has("dram.bytes_per_cycle") ? r.num("dram.bytes_per_cycle") : r.num("dram.bandwidth_gbps") * 1e9 / (c.clock_mhz * 1e6);
  c.icnt_latency = r.u32("icnt.latency");
  c.icnt_bytes_per_cycle_per_sm = r.num("icnt.bytes_per_cycle_per_sm");
  c.const_latency = r.u32("const_cache.hit_latency");
  c.cp_async_sync = r.has("cp_async.mode") && r.str("cp_async.mode") == "sync";
  if (c.sub_cores == 0 || c.num_sms == 0) throw std::invalid_argument("GPU config needs at least one SM and one sub-core");
  if (c.l1_sector == 0 || c.l1_line % c.l1_sector || c.l2_line % c.l2_sector)
    throw std::invalid_argument("GPU config: cache line sizes must be multiples of the sector size");
  return c;
}

}  // namespace stc
