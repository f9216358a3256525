#include "unroll.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cfg.h"
#include "decode.h"

namespace stc {

namespace {

constexpr int kFactor = 4;
constexpr size_t kLookahead = kFactor - 1;  // tests a check evaluates ahead (the copies without a test)
constexpr size_t kMaxBody = 48;   // instructions of the loop block (probe: 48 unrolled, 56 kept)
constexpr size_t kMaxLoads = 16;  // global (or generic) SASS loads in it (probe: 16 unrolled, 20 kept; the
                                  // 4x-unrolled PTX loop of tcs_wmma_sample, 8 wmma.loads = 32 LDGs, kept)

bool is_integer(DType t) {
  switch (t) {
    case DType::B16: case DType::B32: case DType::B64: case DType::U16: case DType::U32: case DType::U64:
    case DType::S16: case DType::S32: case DType::S64:
      return true;
    default:
      return false;
  }
}

bool has(const std::vector<int32_t>& v, int32_t r) { return std::find(v.begin(), v.end(), r) != v.end(); }

// A loop ptxas unrolls: code[head..end], code[end] its back-edge `@p bra head`, code[test] the setp of p,
// code[step] the add/sub of the induction register that operand `iv_operand` (1 or 2) of the test names.
struct Loop {
  size_t head = 0, end = 0, test = 0, step = 0;
  size_t iv_operand = 1;
  uint64_t step_imm = 0;  // the step's immediate (the check adds or subtracts multiples of it as the step does)
};

std::optional<Loop> unrollable(const Kernel& k, size_t end, const std::vector<uint32_t>& entries) {
  const Instr& br = k.code[end];
  if (br.op != Op::Bra || br.guard < 0 || br.target < 0 || static_cast<size_t>(br.target) > end) return {};
  Loop L;
  L.head = static_cast<size_t>(br.target);
  L.end = end;
  if (end - L.head + 1 > kMaxBody) return {};
  for (int32_t pc : k.nounroll)
    if (pc >= static_cast<int32_t>(L.head) && pc <= static_cast<int32_t>(end)) return {};
  size_t loads = 0, tests = 0;
  const int32_t p = br.guard;
  for (size_t pc = L.head; pc < end; ++pc) {
    const Instr& in = k.code[pc];
    if (is_control(in) || (pc > L.head && entries[pc])) return {};  // one basic block
    if (global_load(in)) loads += in.traits.sass_loads;  // ptxas counts its SASS loads
    if (has(in.srcs, p)) return {};
    if (has(in.dsts, p)) {
      ++tests;
      L.test = pc;
    }
  }
  if (entries[end] || loads > kMaxLoads || tests != 1) return {};
  const Instr& test = k.code[L.test];
  if (test.op != Op::Setp || test.guard >= 0 || test.bop != BoolOp::None || test.ops.size() != 3 ||
      test.ops[0].kind != OpndKind::Reg || !is_integer(test.type2))
    return {};
  const auto written = [&](int32_t r) {
    for (size_t pc = L.head; pc < end; ++pc)
      if (has(k.code[pc].dsts, r)) return true;
    return false;
  };
  for (size_t i = 1; i <= 2; ++i) {
    const Operand& iv = test.ops[i];
    const Operand& bound = test.ops[3 - i];
    if (iv.kind != OpndKind::Reg || !(bound.kind == OpndKind::Imm || (bound.kind == OpndKind::Reg && !written(bound.reg))))
      continue;
    size_t writers = 0;
    for (size_t pc = L.head; pc < end; ++pc)
      if (has(k.code[pc].dsts, iv.reg)) {
        ++writers;
        L.step = pc;
      }
    if (writers != 1) continue;
    const Instr& s = k.code[L.step];
    const bool stepped = (s.op == Op::Add || s.op == Op::Sub) && s.guard < 0 && !(s.flags & (F_CC | F_SAT)) &&
                         is_integer(s.type) && s.ops.size() == 3 && s.ops[0].kind == OpndKind::Reg &&
                         s.ops[1].kind == OpndKind::Reg && s.ops[1].reg == iv.reg && s.ops[2].kind == OpndKind::Imm &&
                         s.ops[2].imm_kind == ImmKind::Int && s.dsts.size() == 1;
    if (!stepped) continue;
    L.iv_operand = i;
    L.step_imm = s.ops[2].imm;
    return L;
  }
  return {};
}

int32_t new_register(Kernel& k, const std::string& base, DType type) {
  std::string name;
  for (size_t n = k.regs.size();; ++n) {
    name = base + "$u" + std::to_string(n);  // '$u' + a number: not a name the PTX declared
    if (!k.reg_index.count(name)) break;
  }
  const auto r = static_cast<int32_t>(k.regs.size());
  k.regs.push_back({name, type});
  k.reg_index[name] = r;
  return r;
}

Operand reg_operand(int32_t r) {
  Operand o;
  o.kind = OpndKind::Reg;
  o.reg = r;
  return o;
}

// A check instruction (decoded like a parsed one, then folded: ptxas computes the trip count once).
Instr check_instruction(const Kernel& k, const std::string& opcode, std::vector<Operand> ops, int line) {
  Instr in;
  in.opcode = opcode;
  in.ops = std::move(ops);
  in.line = line;
  in.text = opcode + " (trip check of a loop unrolled as ptxas does)";
  decode_instruction(in, k);
  in.traits.folded = true;
  return in;
}

// Instructions that set `q` to whether the loop's next kLookahead tests, from the induction register's
// current value at the top of an iteration, all continue the loop, combined with `first` (the test just
// made; -1: none). With a back-edge taken on a false predicate, `q` is whether any of them exits instead.
std::vector<Instr> lookahead(const Kernel& k, const Loop& L, int32_t q, int32_t first,
                             const std::vector<int32_t>& temps) {
  const Instr& test = k.code[L.test];
  const Instr& step = k.code[L.step];
  const bool exit_on_true = k.code[L.end].guard_neg;
  const int32_t iv = test.ops[L.iv_operand].reg;
  const uint64_t ahead = L.step < L.test ? 1 : 0;  // the test reads the stepped register
  // The test's opcode with the boolean combination after the comparison: setp.ne.s32 -> setp.ne.and.s32
  const size_t after_cmp = test.opcode.find('.', test.opcode.find('.') + 1);
  const std::string combined = test.opcode.substr(0, after_cmp) + (exit_on_true ? ".or" : ".and") +
                               test.opcode.substr(after_cmp);
  std::vector<Instr> out;
  int32_t acc = first;
  for (size_t j = 0; j < kLookahead; ++j) {
    const uint64_t offset = (j + ahead) * L.step_imm;  // wraps as the step's own arithmetic does
    int32_t value = iv;
    if (offset != 0) {
      Operand imm;
      imm.kind = OpndKind::Imm;
      imm.imm = offset;
      out.push_back(check_instruction(k, step.opcode, {reg_operand(temps[j]), reg_operand(iv), imm}, step.line));
      value = temps[j];
    }
    std::vector<Operand> ops = {reg_operand(q), test.ops[1], test.ops[2]};
    ops[L.iv_operand] = reg_operand(value);
    if (acc >= 0) ops.push_back(reg_operand(acc));
    out.push_back(check_instruction(k, acc >= 0 ? combined : test.opcode, std::move(ops), test.line));
    acc = q;
  }
  return out;
}

// The registers one iteration writes before it reads them (unguarded), so that no value of them lives
// from one iteration into the next: each copy of the body may have its own.
std::unordered_set<int32_t> iteration_local(const Kernel& k, const Loop& L) {
  std::unordered_set<int32_t> defined, carried;
  for (size_t pc = L.head; pc <= L.end; ++pc) {
    const Instr& in = k.code[pc];
    for (int32_t r : in.srcs)
      if (!defined.count(r)) carried.insert(r);
    for (int32_t r : in.dsts) {
      const bool also_read = in.op == Op::Ext;  // an extension may accumulate into its destinations
      if (in.guard < 0 && !also_read) defined.insert(r);
      else if (!defined.count(r)) carried.insert(r);
    }
  }
  std::unordered_set<int32_t> local;
  for (int32_t r : defined)
    if (!carried.count(r) && r != k.carry_reg && r != k.code[L.end].guard) local.insert(r);
  return local;
}

// Per register: whether code after the loop may read it (live where the loop falls through).
std::vector<char> live_after_loop(const Kernel& k, const Loop& L) {
  std::vector<char> after(k.regs.size(), 0);
  if (L.end + 1 >= k.code.size()) return after;
  const size_t words = (k.regs.size() + 63) / 64;
  const std::vector<uint64_t> live = live_in_sets(
      k, [](const Instr&, int32_t) { return false; }, [](const Instr& in, int32_t) { return in.guard < 0; });
  for (size_t r = 0; r < k.regs.size(); ++r)
    after[r] = (live[(L.end + 1) * words + r / 64] >> (r % 64)) & 1;
  return after;
}

void rename(Instr& in, const std::unordered_map<int32_t, int32_t>& to) {
  const auto f = [&](int32_t& r) {
    if (r < 0) return;
    const auto it = to.find(r);
    if (it != to.end()) r = it->second;
  };
  f(in.guard);
  for (auto& o : in.ops) {
    if (o.kind == OpndKind::Reg || o.kind == OpndKind::Mem) f(o.reg);
    for (auto& r : o.vec) f(r);
  }
  for (auto& r : in.srcs) f(r);
  for (auto& r : in.dsts) f(r);
}

Instr branch(const Instr& back_edge, int32_t pred, bool negated, int32_t target) {
  Instr b = back_edge;
  b.guard = pred;
  b.guard_neg = negated;
  b.srcs = {pred};
  b.flags &= ~F_UNI;
  b.target = target;
  b.text = "@" + std::string(negated ? "!" : "") + "(pred) bra (a loop unrolled as ptxas does)";
  return b;
}

void unroll(Kernel& k, const Loop& L) {
  const Instr back_edge = k.code[L.end];
  const bool exit_on_true = back_edge.guard_neg;  // the loop goes on while its predicate is false
  const int32_t p = back_edge.guard;
  const int32_t iv = k.code[L.test].ops[L.iv_operand].reg;
  std::vector<int32_t> temps;
  for (size_t j = 0; j < kLookahead; ++j) temps.push_back(new_register(k, k.regs[iv].name, k.regs[iv].type));
  const int32_t q = new_register(k, "%p_unroll", DType::Pred);
  const auto head = static_cast<int32_t>(L.head);

  // Entry: enough iterations left for the unrolled body, else on to the merge point with the loop's predicate
  // saying "go on" (iteration 0 runs: the loop is a do-while).
  std::vector<Instr> out = lookahead(k, L, q, -1, temps);
  const Instr& test = k.code[L.test];
  out.push_back(check_instruction(k, std::string(exit_on_true ? "setp.ne." : "setp.eq.") + dtype_name(test.type2),
                                  {reg_operand(p), reg_operand(iv), reg_operand(iv)}, test.line));
  const size_t entry = out.size();
  out.push_back(branch(back_edge, q, !exit_on_true, -1));
  // The unrolled body: copies 1..kFactor-1 without the test, their iteration-local registers renamed; the
  // last copy with the test, renaming only registers no code after the loop reads (the values the loop
  // leaves behind stay in the registers it names; a constant re-materialized in the body keeps one writer
  // per register, so fold_constants still folds it).
  const auto body = static_cast<int32_t>(out.size());
  const std::unordered_set<int32_t> local = iteration_local(k, L);
  const std::vector<char> after = live_after_loop(k, L);
  for (int copy = 1; copy <= kFactor; ++copy) {
    std::unordered_map<int32_t, int32_t> to;
    for (int32_t r : local)
      if (copy < kFactor || !after[static_cast<size_t>(r)])
        to[r] = new_register(k, k.regs[static_cast<size_t>(r)].name, k.regs[static_cast<size_t>(r)].type);
    for (size_t pc = L.head; pc < L.end; ++pc) {
      if (copy < kFactor && pc == L.test) continue;
      Instr in = k.code[pc];
      rename(in, to);
      in.unrolled = true;
      out.push_back(std::move(in));
    }
  }
  for (Instr& in : lookahead(k, L, q, p, temps)) out.push_back(std::move(in));
  out.push_back(branch(back_edge, q, exit_on_true, head + body));
  // The merge point (both ways in reconverge here, as ptxas's SASS does after its unrolled loop): leave if
  // the loop is done, else the original loop for the last iterations.
  const auto merge = static_cast<int32_t>(out.size());
  out.push_back(branch(back_edge, p, !exit_on_true, -1));
  const auto rest = static_cast<int32_t>(out.size());
  for (size_t pc = L.head; pc <= L.end; ++pc) out.push_back(k.code[pc]);
  out.back().target = head + rest;
  out[entry].target = head + merge;
  out[static_cast<size_t>(merge)].target = head + static_cast<int32_t>(out.size());

  const auto old_size = static_cast<int32_t>(L.end - L.head + 1);
  const auto grown = static_cast<int32_t>(out.size()) - old_size;
  const auto moved = [&](int32_t pc) {  // where an old pc is now
    if (pc <= head) return pc;
    if (pc <= static_cast<int32_t>(L.end)) return head + rest + (pc - head);
    return pc + grown;
  };
  for (size_t pc = 0; pc < k.code.size(); ++pc)
    if ((pc < L.head || pc > L.end) && k.code[pc].op == Op::Bra) k.code[pc].target = moved(k.code[pc].target);
  for (auto& [name, pc] : k.labels) pc = moved(pc);
  for (int32_t& pc : k.nounroll) pc = moved(pc);
  k.code.erase(k.code.begin() + head, k.code.begin() + static_cast<std::ptrdiff_t>(L.end) + 1);
  k.code.insert(k.code.begin() + head, std::make_move_iterator(out.begin()), std::make_move_iterator(out.end()));
}

}  // namespace

void unroll_loops(Kernel& k) {
  // From the last loop to the first: rewriting one moves only the code after its head.
  std::vector<uint32_t> entries;  // branches targeting each pc
  const auto count_entries = [&] {
    entries.assign(k.code.size() + 1, 0);
    for (const auto& in : k.code)
      if (in.op == Op::Bra && in.target >= 0) ++entries[static_cast<size_t>(in.target)];
  };
  count_entries();
  for (size_t end = k.code.size(); end-- > 0;) {
    if (const std::optional<Loop> L = unrollable(k, end, entries)) {
      unroll(k, *L);
      end = L->head;
      count_entries();
    }
  }
}

}  // namespace stc
