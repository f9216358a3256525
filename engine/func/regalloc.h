// Register compaction: PTX names a fresh virtual register for nearly every value (thousands in a GEMM
// kernel), and the functional register file holds 32 lanes of each per warp, so a warp's file was up to a
// megabyte and every instruction touched cold memory. Like a register allocator (ptxas's), the engine maps
// the virtual registers onto as many slots as are live at once, by liveness, without changing any value a
// thread can read.
#pragma once

#include "../ptx/ir.h"

namespace stc {

// Renames the registers the semantic functions read and write (operands, guards, the carry flag) to slots
// of a smaller register file by colouring their interference, each class apart: registers of up to 32 bits
// on slots of 32-bit lanes (Kernel::reg_slots), wider ones on slots of 64-bit lanes (Kernel::wide_slots,
// named kWideSlot | s). Two registers share a slot only when neither is written while the other is live,
// and the registers one instruction names get distinct slots, except that an unguarded tensor-core mma's destinations may take the slots of sources
// that die there (it reads every source first; accumulators are allocated in place, as ptxas does).
// Instr::srcs / dsts keep the virtual registers (the timing model's scoreboard is per PTX register, as
// before). Registers whose reads the liveness cannot see (an operand that is neither a listed source nor
// destination) keep slots of their own.
void compact_registers(Kernel& k);

}  // namespace stc
