// The timing model's facts of each instruction, known before the launch (TimingModel::IssueFacts, gpu.h):
// its timing class, scoreboard entries, register slots, unit and the kinds of wait it may need.
#include <algorithm>
#include <string>
#include <vector>

#include "../ptx/errors.h"
#include "gpu_internal.h"

namespace stc {

namespace {
// Whether the instruction may need an L1 MSHR: global (or generic) accesses, and cp.async, whose source
// is global memory whatever its destination space.
bool may_touch_global(const Instr& in) {
  if (in.traits.mem == MemKind::AsyncCopy) return true;
  return in.traits.mem != MemKind::None && in.space != Space::Shared && in.space != Space::Param &&
         in.space != Space::Const;
}
}  // namespace

void TimingModel::resolve_classes() {
  const TimingConfig& c = cfg_;
  desc_.reserve(L_.kernel->code.size());
  for (const Instr& in : L_.kernel->code) {
    const OpClassId id = op_class_of(in);
    auto it = c.classes.find(id);
    if (it == c.classes.end()) {
      auto why = c.missing.find(id);
      throw LaunchError("kernel '" + L_.kernel->name + "' uses '" + in.opcode + "' (" + L_.kernel->file + ":" +
                        std::to_string(in.line) + "), which config '" + c.name + "' has no timing for: " +
                        (why != c.missing.end() ? why->second : "no timing class '" + op_class_name(id) + "'"));
    }
    desc_.push_back(&it->second);
  }
  facts_.reserve(L_.kernel->code.size());
  std::vector<int32_t> entry_of(L_.kernel->regs.size(), -1);  // register -> scoreboard entry
  uint64_t code_bytes = 0;  // code address of each instruction: icache.instruction_bytes per SASS instruction
  for (const Instr& in : L_.kernel->code) {
    IssueFacts f;
    if (c.icache) {
      f.line = static_cast<uint32_t>(code_bytes / c.icache_line);
      if (!in.traits.folded) code_bytes += static_cast<uint64_t>(c.inst_bytes) * in.traits.sass_count;
    }
    // Scoreboard entries are numbered in order of first use in the code, not by register: the registers of
    // neighbouring instructions then share the host's cache lines.
    const auto entry = [&](int32_t r) {
      int32_t& e = entry_of[static_cast<size_t>(r)];
      if (e < 0) e = static_cast<int32_t>(scoreboard_entries_++);
      return e;
    };
    f.reg_begin = static_cast<uint32_t>(pc_regs_.size());
    for (const auto* regs : {&in.srcs, &in.dsts})
      for (int32_t r : regs == &in.dsts && in.traits.result_unused ? std::vector<int32_t>{} : *regs)
        if (const int32_t e = entry(r); std::find(pc_regs_.begin() + f.reg_begin, pc_regs_.end(), e) == pc_regs_.end())
          pc_regs_.push_back(e);
    f.reg_count = static_cast<uint16_t>(pc_regs_.size() - f.reg_begin);
    f.dst_begin = static_cast<uint32_t>(pc_dsts_.size());
    if (!in.traits.result_unused)  // a RED in SASS: nothing waits for its destination
      for (int32_t r : in.dsts) pc_dsts_.push_back(entry(r));
    f.dst_count = static_cast<uint16_t>(pc_dsts_.size() - f.dst_begin);
    f.slot_begin = static_cast<uint32_t>(pc_slots_.size());
    const auto add_slot = [&](int32_t r) {
      if (r >= 0 && std::find(pc_slots_.begin() + f.slot_begin, pc_slots_.end(), r) == pc_slots_.end()) pc_slots_.push_back(r);
    };
    for (const Operand& o : in.ops) {
      if (o.kind == OpndKind::Vec) for (int32_t r : o.vec) add_slot(r);
      else if (o.kind == OpndKind::Reg || o.kind == OpndKind::Mem) add_slot(o.reg);
    }
    if (in.guard >= 0) add_slot(in.guard);
    f.slot_count = static_cast<uint16_t>(pc_slots_.size() - f.slot_begin);
    // its scoreboard entries' host lines of reg_ready, each once (issue() prefetches them)
    f.ready_begin = static_cast<uint32_t>(pc_ready_lines_.size());
    for (uint32_t i = f.reg_begin; i < f.reg_begin + f.reg_count; ++i)
      if (const auto line = static_cast<uint32_t>(pc_regs_[i]) / 8;
          std::find(pc_ready_lines_.begin() + f.ready_begin, pc_ready_lines_.end(), line) == pc_ready_lines_.end())
        pc_ready_lines_.push_back(line);
    f.ready_count = static_cast<uint16_t>(pc_ready_lines_.size() - f.ready_begin);
    f.unit = static_cast<uint8_t>(desc_[facts_.size()]->pipe.value_or(in.unit));
    f.folded = in.traits.folded;
    f.waits_groups = in.traits.async == AsyncKind::WaitGroup || in.traits.async == AsyncKind::WaitAll;
    f.serial_async = L_.serialize_wgmma && in.traits.async_group;
    f.may_touch_global = may_touch_global(in);
    f.shared_state = f.may_touch_global || (in.traits.extension && !in.traits.sm_local);
    f.global_store = c.store_sector_cycles > 0 && in.traits.mem == MemKind::Store && f.may_touch_global;
    // each lane's one record (or its vector's contiguous elements) of at most 16 bytes: memory_instructions
    // would count 1 from the records; a cp.async moves 4, 8 or 16 bytes per lane (one LDGSTS)
    f.one_ldst = in.traits.single_ldst;
    f.sass = in.traits.sass_count;
    f.branch = in.traits.branch;
    f.cas_loop = in.traits.cas_loop;
    const OpDesc& desc = *desc_[facts_.size()];
    f.fixed = !in.traits.folded && in.unit != Unit::TENSOR && in.unit != Unit::LDST &&
              in.traits.mem == MemKind::None && in.traits.async == AsyncKind::None && !in.traits.async_group &&
              !in.traits.tensor_math && !desc.model && !desc.account;
    if (f.fixed) {
      f.interval = desc.timing.interval * f.sass;
      f.done_after = desc.timing.latency + (f.sass - 1u);
    }
    facts_.push_back(f);
  }
  if (c.icache) {
    code_lines_ = static_cast<uint32_t>((code_bytes + c.icache_line - 1) / c.icache_line);
    code_in_l2_.assign(code_lines_ + 1, -1.0);
    // what the level above the L1 holds at launch was fetched by the launch before, through L2
    std::fill_n(code_in_l2_.begin(), std::min<size_t>(code_in_l2_.size(), c.icache_l15_lines), 0.0);
  }
  int_latency_ = c.classes.at(op_class_id("units.int")).timing.latency;
  branch_latency_ = c.classes.at(op_class_id("units.branch")).timing.latency;
}

}  // namespace stc
