// Control-flow analysis: the reconvergence point (immediate post-dominator) of each branch.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "../ptx/ir.h"

namespace stc {

// Sets Instr::reconv of every bra to the first pc of the immediate post-dominator of its block, or -1 when
// that is the kernel's exit.
void compute_reconvergence(Kernel& k);

// Liveness: bit r of live_in[pc * words + r / 64] (words = ceil(registers / 64)) is set when register r may
// be read at or after pc before it is written. An instruction reads its srcs, and those of its dsts that
// `reads` names (a destination it also reads, such as an accumulator updated in place); a destination
// `kills` names ends the earlier value's life (a guarded write does not: its lanes may keep it).
std::vector<uint64_t> live_in_sets(const Kernel& k, const std::function<bool(const Instr&, int32_t)>& reads,
                                   const std::function<bool(const Instr&, int32_t)>& kills);

// Per register: whether every value it holds is the same in all threads of a warp as far as the data says
// (computed only from parameters, constants, immediates and %ctaid/%nctaid/%ntid-like special registers,
// under uniform guards). ptxas keeps such values in the constant bank or in uniform registers (sm_75 and
// later), not in the per-thread register file. Divergent control flow is not considered: an estimate for
// register pressure, not a correctness property.
std::vector<char> warp_uniform_registers(const Kernel& k);

// 32-bit register slots a value of register r takes (64-bit: two, predicates: none).
uint32_t register_slots(const Kernel& k, int32_t r);

// Registers per thread a register allocator would need: the peak number of simultaneously live 32-bit
// register slots (64-bit registers count two, predicates none) from a liveness analysis, plus two reserved.
uint32_t estimate_registers(const Kernel& k);

// Successor pcs of the instruction at pc (none past the end: the kernel exits).
void successors(const Kernel& k, int pc, std::vector<int>& out);

// True for a load that may read global memory (its space global, or generic: resolved per lane).
bool global_load(const Instr& in);

// True for instructions that set the warp's pc themselves (bra, ret, exit, trap). Inline: the executor
// asks it of every instruction it steps.
inline bool is_control(const Instr& in) {
  return in.op == Op::Bra || in.op == Op::Ret || in.op == Op::Exit || in.op == Op::Trap;
}

}  // namespace stc
