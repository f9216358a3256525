// Whether a kernel's Tensor Core results can reach its timing, so that a launch that only wants cycles may
// skip their arithmetic (LaunchRequest::skip_mma_values; the idea of a trace-driven simulator such as
// Accel-Sim, which times a kernel without computing its values). The timing model reads a value only where
// it decides an address, a predicate (a guard, a branch) or an operand that steers an instruction (a barrier's
// count, a copy's size, a descriptor, an extension's operands); the arithmetic of an mma, wmma.mma,
// mma.sp, wgmma.mma_async or an extension's matrix multiply decides none of those itself. So when no value
// derived from such a result reaches one of those places, the launch's schedule, its memory traffic and
// every statistic are the same whether the results are computed or not; only the memory they are stored
// into differs.
//
// The analysis is a forward taint, conservative: every destination of a Tensor Core instruction is tainted
// (registers flow-insensitively); an instruction with a tainted source taints its destinations; a store of
// a tainted value taints, in its state space (a generic store in every space), every load the code can
// reach from it: along the next instruction and branch targets, and from any synchronization point (a CTA
// barrier, a fence, an acquiring or releasing atomic, an mbarrier or bulk copy) to every other, where another thread may go on
// after this one's store. A load no such path reaches could only see the result through a data race, which
// the CUDA memory model leaves undefined; an ld.global.nc reads memory the kernel never writes (PTX ISA),
// so never a result. The results count when a tainted value reaches a guard, an address base register, a
// branch or barrier operand, an operand of a Tensor Core instruction outside its fragments
// (Traits::fragment_operands: descriptors, metadata, coordinates, selectors, scale-d), a cp.async, an
// extension's other instructions, or an instruction without destinations that is no store.
#pragma once

#include <string>

#include "../ptx/ir.h"

namespace stc {

// "" when no value derived from a Tensor Core instruction's result can reach the timing (see above), else
// the first instruction where one can and what it decides there ("file:line `text`: a Tensor Core result
// reaches its address"), or that the kernel has no Tensor Core instruction (nothing to skip). Runs on the kernel as parsed, before register compaction (operands name PTX
// registers).
std::string mma_values_note(const Kernel& k);

}  // namespace stc
