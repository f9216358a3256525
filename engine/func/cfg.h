// Control-flow analysis: the reconvergence point (immediate post-dominator) of each branch.
#pragma once

#include "../ptx/ir.h"

namespace stc {

// Sets Instr::reconv of every bra to the first pc of the immediate post-dominator of its block, or -1 when
// that is the kernel's exit.
void compute_reconvergence(Kernel& k);

// Registers per thread a register allocator would need: the peak number of simultaneously live 32-bit
// register slots (64-bit registers count two, predicates none) from a liveness analysis, plus two reserved.
uint32_t estimate_registers(const Kernel& k);

// True for instructions that set the warp's pc themselves (bra, ret, exit, trap).
bool is_control(const Instr& in);

}  // namespace stc
