#include "config.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace stc {

const ConfigValue& ConfigReader::get(const std::string& key) const {
  auto it = f_.find(key);
  if (it == f_.end()) throw std::invalid_argument("GPU config is missing key '" + key + "' (needed by the timing model)");
  return it->second;
}

double ConfigReader::num(const std::string& key) {
  const ConfigValue& v = get(key);
  if (!std::holds_alternative<double>(v)) throw std::invalid_argument("GPU config key '" + key + "' must be a number");
  const double d = std::get<double>(v);
  if (!std::isfinite(d)) throw std::invalid_argument("GPU config key '" + key + "' must be finite");
  read_[key] = d;
  return d;
}

uint64_t ConfigReader::u64(const std::string& key) {
  const double v = num(key);
  if (v < 0 || v != std::floor(v) || v > 1.8e19)
    throw std::invalid_argument("GPU config key '" + key + "' must be a non-negative integer");
  return static_cast<uint64_t>(v);
}

uint32_t ConfigReader::u32(const std::string& key) {
  const uint64_t v = u64(key);
  if (v > UINT32_MAX) throw std::invalid_argument("GPU config key '" + key + "' must be below 2^32");
  return static_cast<uint32_t>(v);
}

std::string ConfigReader::str(const std::string& key) {
  const ConfigValue& v = get(key);
  if (!std::holds_alternative<std::string>(v)) throw std::invalid_argument("GPU config key '" + key + "' must be a string");
  read_[key] = v;
  return std::get<std::string>(v);
}

std::vector<uint64_t> ConfigReader::ints(const std::string& key) {
  const std::string text = str(key);
  std::vector<uint64_t> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 12)
      throw std::invalid_argument("GPU config key '" + key + "' must be a list of integers (\"0,8,16\"), got '" + text + "'");
    out.push_back(std::stoull(item));
    at = end + 1;
  }
  return out;
}

bool ConfigReader::flag(const std::string& key) {
  const double v = num(key);
  if (v != 0 && v != 1) throw std::invalid_argument("GPU config key '" + key + "' must be true or false");
  return v != 0;
}

TimingConfig timing_config_from(const FlatConfig& flat) {
  ConfigReader r(flat);
  TimingConfig c;
  c.name = r.str("gpu.name");
  c.launch_overhead = r.u32("gpu.launch_overhead_cycles");
  c.num_sms = r.u32("gpu.num_sms");
  c.sub_cores = r.u32("sm.sub_cores");
  c.gto = r.str("sched.policy") == "gto";  // (gto or lrr: the schema's choice)
  c.issue_width = r.u32("sched.issue_width");
  c.max_warps = r.u32("sm.max_warps");
  c.max_ctas = r.u32("sm.max_ctas");
  c.registers = r.u32("sm.registers");
  c.reg_alloc_unit = r.u32("sm.register_alloc_unit");
  c.max_regs_per_thread = r.u32("sm.max_registers_per_thread");
  c.shared_per_sm = r.u64("sm.shared_mem_bytes");
  c.max_shared_per_cta = r.u64("sm.max_shared_per_cta_bytes");
  c.shared_alloc_unit = r.u64("sm.shared_alloc_unit_bytes");
  c.shared_reserved_per_cta = r.u64("sm.shared_reserved_per_cta_bytes");
  for (uint64_t kb : r.ints("sm.shared_carveouts_kb")) c.shared_carveouts.push_back(kb * 1024);
  c.unified_l1_shared = r.u64("sm.unified_l1_shared_bytes");
  for (const OpClassDef& def : op_classes()) {
    std::string why;
    // A later class of the same name (an extension's) replaces an earlier one where it has a timing.
    const OpClassId id = op_class_id(def.name);
    if (std::optional<OpDesc> d = def.read(r, why)) {
      c.classes[id] = std::move(*d);
      c.missing.erase(id);
    } else if (!c.classes.count(id)) {
      c.missing[id] = why;
    }
  }
  c.tensor_pipes = r.u32("tensor.pipes_per_subcore");
  c.smem_banks = r.u32("smem.banks");
  c.smem_bank_bytes = r.u32("smem.bank_width_bytes");
  c.smem_latency = r.u32("smem.latency");
  c.smem_cycles_per_wavefront = r.u32("smem.cycles_per_wavefront");
  c.smem_wavefront_latency = r.u32("smem.wavefront_latency");
  c.smem_matrix_extra_latency = r.u32("smem.matrix_extra_latency");
  c.movm_latency = r.u32("tensor.movm_latency");
  c.smem_cas_iteration = r.num("smem.cas_iteration_cycles");
  c.smem_cas_address = r.num("smem.cas_address_cycles");
  c.smem_cas_iteration_b32 = r.num("smem.cas_iteration_cycles_b32");
  c.smem_cas_address_b32 = r.num("smem.cas_address_cycles_b32");
  c.l1_sets = r.u32("l1d.sets");
  c.l1_assoc = r.u32("l1d.assoc");
  c.l1_line = r.u32("l1d.line_bytes");
  c.l1_sector = r.u32("l1d.sector_bytes");
  c.l1_latency = r.u32("l1d.hit_latency");
  c.l1_mshr = r.u32("l1d.mshr_entries");
  c.store_sector_cycles = r.num("l1d.store_sector_cycles");
  c.l2_sets = r.u32("l2.sets_per_slice");
  c.l2_slices = r.u32("l2.slices");
  c.l2_assoc = r.u32("l2.assoc");
  c.l2_line = r.u32("l2.line_bytes");
  c.l2_sector = r.u32("l2.sector_bytes");
  c.l2_latency = r.u32("l2.hit_latency");
  c.l2_access = r.u32("l2.access_cycles");
  c.l2_slice_bytes_per_cycle = r.num("l2.slice_bytes_per_cycle");
  c.l2_slice_write_bytes_per_cycle = r.num("l2.slice_write_bytes_per_cycle");
  c.l2_slice_fill_bytes_per_cycle = r.num("l2.slice_fill_bytes_per_cycle");
  c.l2_atomic_update_cycles = r.num("l2.atomic_update_cycles");
  c.l2_atomic_rounds_per_cycle = r.num("l2.atomic_rounds_per_cycle");
  c.l2_atomic_words_per_cycle = r.num("l2.atomic_words_per_cycle");
  c.l2_interleave = r.u32("l2.slice_interleave_bytes");
  c.l2_slice_request_cycles = r.num("l2.slice_request_cycles");
  c.l2_dram_fetch = r.u32("l2.dram_fetch_bytes");
  c.l2_xor_sets = r.str("l2.set_index") == "xor";
  c.dram_channels = r.u32("dram.channels");
  c.dram_access = r.u32("dram.access_cycles");
  c.dram_bytes_per_cycle_per_channel = r.num("dram.bytes_per_cycle_per_channel");
  c.icnt_latency = r.u32("icnt.latency");
  c.icnt_bytes_per_cycle_per_sm = r.num("icnt.bytes_per_cycle_per_sm");
  c.const_latency = r.u32("const_cache.hit_latency");
  c.icache = r.flag("icache.enabled");
  if (c.icache) {
    c.inst_bytes = r.u32("icache.instruction_bytes");
    c.icache_line = r.u32("icache.line_bytes");
    c.icache_l0_lines = r.u32("icache.l0_bytes") / c.icache_line;  // (whole lines: stcsim/config/rules.py)
    c.icache_l1_lines = r.u32("icache.l1_bytes") / c.icache_line;
    c.icache_l15_lines = r.u32("icache.l15_bytes") / c.icache_line;
    c.icache_fill = r.num("icache.fill_cycles");
    c.icache_l2_fill = r.num("icache.l2_fill_cycles");
    c.icache_dram_fill = r.num("icache.dram_fill_cycles");
  }
  c.cp_async_sync = r.flag("features.cp_async") && r.str("cp_async.mode") == "sync";
  // Ranges and cross-key constraints are checked once, in Python (stcsim/config/schema.py and rules.py),
  // before a config reaches the engine; here only what the reader's types demand.
  c.l2_slice_map = find_l2_slice_map(r.str("l2.slice_map"));
  // Not a config check but the engine's own table's invariant (memsys indexes per-slice state by the map's
  // slice numbers): rules.py states it to users; this keeps memory safe should the two ever drift apart.
  if (c.l2_slice_map && (c.l2_slice_map->slices != c.l2_slices || c.l2_slice_map->unit_bytes != c.l2_interleave))
    throw std::invalid_argument("GPU config key 'l2.slice_map' names a map of " + std::to_string(c.l2_slice_map->slices) +
                                " slices in units of " + std::to_string(c.l2_slice_map->unit_bytes) +
                                " bytes: it needs l2.slices and l2.slice_interleave_bytes to match");
  c.record = r.read();
  return c;
}

}  // namespace stc
