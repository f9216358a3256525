#include "engine.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <sstream>
#include <type_traits>

#include "func/executor.h"
#include "func/numeric.h"
#include "func/regalloc.h"
#include "func/schedule.h"
#include "func/value_flow.h"
#include "ptx/errors.h"
#include "ptx/parser.h"
#include "timing/gpu.h"

namespace stc {

namespace {
uint64_t align_up(uint64_t v, uint64_t a) { return a ? (v + a - 1) / a * a : v; }

// The most shared memory (static + dynamic) one block may have on a GPU of compute capability sm_XX: the
// opt-in maximum of the CUDA C++ Programming Guide, "Technical Specifications per Compute Capability",
// row "Maximum amount of shared memory per thread block" (KB there are KiB). The limit of launches on an
// engine without a config; 0 (no .target known) takes the largest of any GPU.
uint64_t max_shared_per_block(uint16_t sm) {
  constexpr uint64_t KiB = 1024;
  if (sm == 0) return 227 * KiB;
  if (sm >= 120) return 99 * KiB;              // 12.x
  if (sm >= 90) return 227 * KiB;              // 9.0, 10.x, 11.0
  if (sm == 86 || sm == 89) return 99 * KiB;   // 8.6, 8.9
  if (sm >= 80) return 163 * KiB;              // 8.0, 8.7
  if (sm >= 75) return 64 * KiB;               // 7.5
  if (sm >= 70) return 96 * KiB;               // 7.0, 7.2
  return 48 * KiB;                             // 5.x, 6.x
}
}  // namespace

std::vector<std::string> Engine::load_ptx(const std::string& text, const std::string& file,
                                          const std::map<std::string, SassFacts>& sass) {
  const size_t h = std::hash<std::string>{}(text);
  auto seen = loaded_.find(h);
  if (seen != loaded_.end() && seen->second.text == text) {  // same module again: its entries launch again
    for (auto& k : seen->second.module->kernels)
      if (k->is_entry) kernels_[k->name] = {seen->second.module, k.get()};
    return seen->second.names;
  }
  std::unique_ptr<Module> m = parse_ptx(text, file);
  // The register estimate (occupancy) stays the one of the PTX order: like ptxas, the schedule trades
  // register pressure for latency, which a pure hoisting schedule would overstate.
  for (auto& k : m->kernels) {
    const auto f = sass.find(k->name);
    if (f != sass.end()) k->sass = f->second;
  }
  if (schedule_loads_)
    for (auto& k : m->kernels) schedule_loads_early(*k);
  for (auto& k : m->kernels) k->mma_values_note = mma_values_note(*k);  // on PTX registers: before compaction
  for (auto& k : m->kernels) compact_registers(*k);
  std::vector<std::string> names;
  for (auto& k : m->kernels)
    if (k->is_entry) names.push_back(k->name);  // a kernel of the same name loaded earlier is replaced
  link(*m);
  loaded_[h] = {text, names, m.get()};
  for (auto& k : m->kernels)
    if (k->is_entry) kernels_[k->name] = {m.get(), k.get()};
  modules_.push_back(std::move(m));
  return names;
}

void Engine::link(Module& m) {
  for (auto& v : m.globals) {
    if (v.space == Space::Global) {
      v.address = mem_.malloc(v.size ? v.size : 1);
      if (!v.init.empty()) std::memcpy(mem_.find(v.address, v.init.size()), v.init.data(), v.init.size());
    } else if (v.space == Space::Const) {
      v.address = align_up(const_bank_.size(), v.align);
      const_bank_.resize(v.address + v.size, 0);
      std::copy(v.init.begin(), v.init.end(), const_bank_.begin() + static_cast<std::ptrdiff_t>(v.address));
    }
  }
  for (auto& kp : m.kernels) {
    Kernel& k = *kp;
    uint64_t shared = 0, local = 0, dyn_align = 16;
    for (auto& s : k.symbols) {
      const Variable* v = nullptr;
      if (s.space == Space::Param) {
        s.address = k.params[static_cast<size_t>(s.index)].offset;
        continue;
      }
      v = s.module_scope ? &m.globals[static_cast<size_t>(s.index)] : &k.locals[static_cast<size_t>(s.index)];
      if (v->space == Space::Shared && v->is_extern) { dyn_align = std::max<uint64_t>(dyn_align, v->align); continue; }
      if (v->space == Space::Shared) { shared = align_up(shared, v->align); s.address = shared; shared += v->size; }
      else if (v->space == Space::Local) { local = align_up(local, v->align); s.address = local; local += v->size; }
      else s.address = v->address;
    }
    const uint64_t dyn_base = align_up(shared, dyn_align);
    for (auto& s : k.symbols) {
      if (s.space != Space::Shared) continue;
      const Variable& v = s.module_scope ? m.globals[static_cast<size_t>(s.index)] : k.locals[static_cast<size_t>(s.index)];
      if (v.is_extern) s.address = dyn_base;
    }
    k.static_shared_bytes = shared;
    k.local_bytes = align_up(local, 8);
    for (auto& in : k.code)
      for (auto& o : in.ops) {
        if (o.sym < 0) continue;
        if (o.kind == OpndKind::Mem) { o.imm += k.symbols[static_cast<size_t>(o.sym)].address; o.sym = -1; }
        else if (o.kind == OpndKind::Symbol) { o.kind = OpndKind::Imm; o.imm = k.symbols[static_cast<size_t>(o.sym)].address; o.sym = -1; }
      }
  }
}

const Kernel& Engine::kernel(const std::string& name) const {
  auto it = kernels_.find(name);
  if (it == kernels_.end()) {
    std::string known;
    for (const auto& [n, _] : kernels_) known += (known.empty() ? "" : ", ") + n;
    throw LaunchError("unknown kernel '" + name + "'; loaded kernels: " + (known.empty() ? "(none)" : known));
  }
  return *it->second.second;
}

std::vector<std::string> Engine::kernel_names() const {
  std::vector<std::string> out;
  for (const auto& [n, _] : kernels_) out.push_back(n);
  return out;
}

namespace {

// "argument 1 ('n', .u32) of kernel 'k'", for messages.
std::string argument_name(const Kernel& k, size_t i) {
  const Param& p = k.params[i];
  return "argument " + std::to_string(i) + " ('" + p.name + "', ." + dtype_name(p.type) + ") of kernel '" + k.name + "'";
}

// The argument as the user wrote it: integers in full, floats in their shortest round-trip form.
std::string decimal(const KernelArg& a) {
  return std::visit([](const auto& v) -> std::string {
    using V = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<V, OutOfRangeInt>) {
      return v.text;
    } else if constexpr (std::is_same_v<V, ByteArg>) {
      return std::to_string(v.bytes.size()) + " bytes";
    } else if constexpr (std::is_same_v<V, double>) {
      char buf[32];
      const auto r = std::to_chars(buf, buf + sizeof buf, v);
      return std::string(buf, r.ptr);
    } else {
      return std::to_string(v);
    }
  }, a);
}

bool is_float_scalar(DType t) { return t == DType::F64 || t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// The bits of a floating-point parameter holding `a`; throws when a finite value overflows the type.
uint64_t float_param_bits(const Kernel& k, size_t i, const KernelArg& a) {
  const DType t = k.params[i].type;
  if (std::holds_alternative<OutOfRangeInt>(a))
    throw LaunchError(argument_name(k, i) + ": the integer " + decimal(a) + " is outside [-2^63, 2^64); pass a float");
  if (std::holds_alternative<ByteArg>(a)) throw LaunchError(argument_name(k, i) + " is a scalar, got " + decimal(a));
  const double v = std::holds_alternative<double>(a) ? std::get<double>(a)
                 : std::holds_alternative<int64_t>(a) ? static_cast<double>(std::get<int64_t>(a))
                                                      : static_cast<double>(std::get<uint64_t>(a));
  uint64_t bits = 0;
  double stored = v;
  switch (t) {
    case DType::F64: bits = bits_from_f64(v); break;
    case DType::F32: bits = bits_from_f32(static_cast<float>(v)); stored = f32_from_bits(bits); break;
    case DType::F16: bits = double_to_half(v); stored = half_to_double(static_cast<uint16_t>(bits)); break;
    case DType::BF16: bits = double_to_bf16(v); stored = bf16_to_double(static_cast<uint16_t>(bits)); break;
    default: return 0;  // not a scalar float type (is_float_scalar)
  }
  if (std::isfinite(v) && !std::isfinite(stored))
    throw LaunchError(argument_name(k, i) + ": " + decimal(a) + " overflows ." + dtype_name(t));
  return bits;
}

// The bits of an integer (or packed, e.g. .f16x2) parameter holding `a`: any value that fits the parameter's width as a signed or
// an unsigned integer (so -1 is accepted for .u32 as 0xffffffff, and 2^32 - 1 for .s32).
uint64_t int_param_bits(const Kernel& k, size_t i, const KernelArg& a) {
  const Param& p = k.params[i];
  if (std::holds_alternative<double>(a))
    throw LaunchError(argument_name(k, i) + " must be an integer, got a float (" + decimal(a) + ")");
  const bool fits = std::visit([&](const auto& v) {
    using V = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<V, OutOfRangeInt> || std::is_same_v<V, double> || std::is_same_v<V, ByteArg>) return false;
    else if constexpr (std::is_same_v<V, int64_t>) return p.size >= 8 || (v >= -(int64_t{1} << (8 * p.size - 1)) && v < (int64_t{1} << (8 * p.size)));
    else return p.size >= 8 || v < (uint64_t{1} << (8 * p.size));
  }, a);
  if (!fits)
    throw LaunchError(argument_name(k, i) + ": " + decimal(a) + " does not fit ." + dtype_name(p.type) + " (" +
                      std::to_string(8 * p.size) + " bits, signed or unsigned)");
  if (std::holds_alternative<ByteArg>(a)) throw LaunchError(argument_name(k, i) + " is a scalar, got " + decimal(a));
  return std::holds_alternative<int64_t>(a) ? static_cast<uint64_t>(std::get<int64_t>(a)) : std::get<uint64_t>(a);
}

}  // namespace

std::vector<uint8_t> Engine::pack_params(const Kernel& k, const std::vector<KernelArg>& args) const {
  if (args.size() != k.params.size()) {
    std::ostringstream s;
    s << "kernel '" << k.name << "' takes " << k.params.size() << " arguments (";
    for (size_t i = 0; i < k.params.size(); ++i) s << (i ? ", " : "") << "." << dtype_name(k.params[i].type) << " " << k.params[i].name;
    s << "), got " << args.size();
    throw LaunchError(s.str());
  }
  std::vector<uint8_t> buf(k.param_bytes, 0);
  for (size_t i = 0; i < args.size(); ++i) {
    const Param& p = k.params[i];
    if (p.size > 8) {  // an aggregate (.b8 array): its bytes, exactly
      const ByteArg* b = std::get_if<ByteArg>(&args[i]);
      if (!b || b->bytes.size() != p.size)
        throw LaunchError(argument_name(k, i) + " is a " + std::to_string(p.size) + "-byte aggregate: pass exactly " +
                          std::to_string(p.size) + " bytes (e.g. a TensorMap), got " + decimal(args[i]));
      std::memcpy(buf.data() + p.offset, b->bytes.data(), p.size);
      continue;
    }
    const uint64_t bits = is_float_scalar(p.type) ? float_param_bits(k, i, args[i]) : int_param_bits(k, i, args[i]);
    std::memcpy(buf.data() + p.offset, &bits, p.size);
  }
  return buf;
}

StatMap Engine::launch(const LaunchRequest& req) {
  const Kernel& k = kernel(req.kernel);
  for (int i = 0; i < 3; ++i) {
    if (req.grid[i] == 0 || req.block[i] == 0)
      throw LaunchError("grid and block dimensions must be positive (kernel '" + k.name + "')");
  }
  const uint64_t threads = static_cast<uint64_t>(req.block[0]) * req.block[1] * req.block[2];
  if (threads > 1024 || req.block[2] > 64)
    throw LaunchError("block of " + std::to_string(threads) + " threads exceeds the limit of 1024 (z <= 64) for kernel '" + k.name + "'");
  for (int i = 0; i < 3; ++i)
    if (k.reqntid[i] && k.reqntid[i] != req.block[i])
      throw LaunchError("kernel '" + k.name + "' requires .reqntid " + std::to_string(k.reqntid[0]) + "," +
                        std::to_string(k.reqntid[1]) + "," + std::to_string(k.reqntid[2]));
  if (req.grid[1] > 65535 || req.grid[2] > 65535)
    throw LaunchError("grid y and z must be at most 65535 (kernel '" + k.name + "')");
  LaunchState L;
  L.kernel = &k;
  L.module = kernels_.at(req.kernel).first;
  L.mem = &mem_;
  L.const_bank = &const_bank_;
  L.params = pack_params(k, req.args);
  for (int i = 0; i < 3; ++i) { L.grid[i] = req.grid[i]; L.block[i] = req.block[i]; }
  L.dynamic_shared = req.dynamic_shared;
  L.serialize_wgmma = req.serialize_wgmma;
  L.mma_values = !(req.skip_mma_values && k.mma_values_note.empty());
  L.shared_bytes = (req.dynamic_shared ? align_up(k.static_shared_bytes, 16) : k.static_shared_bytes) + req.dynamic_shared;
  // The config's limit whether or not the launch is timed; without a config, the PTX target's.
  const uint64_t shared_limit = has_config_ ? cfg_.max_shared_per_cta : max_shared_per_block(k.sm);
  if (L.shared_bytes > shared_limit)
    throw LaunchError("kernel '" + k.name + "' needs " + std::to_string(L.shared_bytes) +
                      " bytes of shared memory per block; " +
                      (has_config_ ? cfg_.name : "sm_" + std::to_string(k.sm) + " (its .target; the engine has no config)") +
                      " allows " + std::to_string(shared_limit));
  if (L.shared_bytes >= (uint64_t{1} << 32))  // .shared addresses are 32-bit (PTX ISA)
    throw LaunchError("kernel '" + k.name + "' needs " + std::to_string(L.shared_bytes) +
                      " bytes of shared memory per block: more than the 32-bit shared window holds");
  stc::Stats st;
  st[TStat::GridCtas] = static_cast<double>(static_cast<uint64_t>(L.grid[0]) * L.grid[1] * L.grid[2]);
  st[TStat::BlockThreads] = static_cast<double>(threads);
  st[TStat::SharedBytesPerCta] = static_cast<double>(L.shared_bytes);
  st[TStat::RegsPerThread] = static_cast<double>(req.regs_per_thread ? req.regs_per_thread : k.regs_per_thread);
  const bool timing = req.timing && has_config_;
  Watchdog watchdog(req.limits, req.interrupt);
  watchdog.check_grid(L);
  if (timing) {
    TimingModel tm(cfg_, L, req.regs_per_thread, req.sample, st, watchdog, req.threads, req.lockstep);  // sets regs_per_thread to the value occupancy uses
    tm.run();
    if (req.sample > 0)
      watchdog.check_estimate(L, static_cast<uint64_t>(st[TStat::KernelCycles]), static_cast<uint64_t>(st[TStat::WarpInsts]));
  } else {
    L.record_accesses = false;
    Executor ex(L);
    ex.run_functional(watchdog);
    ex.stats().export_to(st);
  }
  StatMap out;
  st.finish(timing, req.sample > 0, out);
  if (req.skip_mma_values) out["mma_values_skipped"] = L.mma_values ? 0.0 : 1.0;
  return out;
}

void Engine::set_config(const FlatConfig& flat) {
  cfg_ = timing_config_from(flat);
  has_config_ = true;
}

void Engine::copy_to(uint64_t addr, const uint8_t* src, uint64_t n) {
  if (n == 0) return;
  uint8_t* p = mem_.find(addr, n);
  if (!p) {
    std::ostringstream s;
    s << "copy_to of " << n << " bytes at 0x" << std::hex << addr << " is outside every allocation (" << mem_.describe(addr, n) << ")";
    throw LaunchError(s.str());
  }
  std::memcpy(p, src, n);
}

void Engine::copy_from(uint64_t addr, uint8_t* dst, uint64_t n) {
  if (n == 0) return;
  const uint8_t* p = mem_.find(addr, n);
  if (!p) {
    std::ostringstream s;
    s << "copy_from of " << n << " bytes at 0x" << std::hex << addr << " is outside every allocation (" << mem_.describe(addr, n) << ")";
    throw LaunchError(s.str());
  }
  std::memcpy(dst, p, n);
}

}  // namespace stc
