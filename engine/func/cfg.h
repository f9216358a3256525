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

// Registers per thread a register allocator would need: the peak number of simultaneously live 32-bit
// register slots (64-bit registers count two, predicates none) from a liveness analysis, plus two reserved.
uint32_t estimate_registers(const Kernel& k);

// True for instructions that set the warp's pc themselves (bra, ret, exit, trap).
bool is_control(const Instr& in);

}  // namespace stc
