// Instruction scheduling within basic blocks, as ptxas does before the hardware sees the code: long-latency
// loads are issued as early as their dependencies allow. PTX as nvcc writes it interleaves each load with
// its use; executed in that order by an in-order issue model, every load would stall the warp that ptxas's
// schedule keeps busy.
#pragma once

#include "../ptx/ir.h"

namespace stc {

// First unrolls the loops ptxas unrolls (func/unroll.h). Then reorders each basic block of `k` by list
// scheduling on its dependency graph (registers read/written, guard predicates, memory order of
// stores/atomics/async copies, barriers, fences, clock reads and control flow stay ordered; a load stays
// after an earlier Tensor Core instruction, as ptxas keeps it): the ready instruction with the longest path
// to the block's end goes first, loads weighing much more than other instructions, ties in program order;
// a global load waits while the values in flight would exceed the kernel's register estimate (warp-uniform
// values, which ptxas keeps in uniform registers or the constant bank, not counted). Block boundaries,
// labels and branch targets do not move, so the semantics are unchanged.
// Before scheduling it if-converts short forward branches (a guarded `bra` over at most 8 straight-line
// instructions becomes those instructions guarded by the negated predicate, as ptxas predicates them), so
// that loads in bounds-checked blocks can be scheduled with their neighbours.
void schedule_loads_early(Kernel& k);

// Marks the constants ptxas folds (Traits::folded): an unguarded `mov` of an immediate into a register that
// no other instruction of the kernel writes. ptxas propagates such a constant into its users or hoists it
// out of the loop, so it is no SASS instruction where nvcc's PTX re-materializes it (in every loop
// iteration). Marks already set (the unrolling's trip checks) stay.
void fold_constants(Kernel& k);

// Marks the atomics whose result no instruction of the kernel reads (Traits::result_unused): ptxas issues
// them as RED, without a destination (the SASS of histogram_atomic: `atom.global.add.u32 %r13, ...` with
// %r13 never read is `REDG.E.ADD`, results/reference/h100_sass_atomics.txt), so the timing model's scoreboard does not wait for them.
// Not a shared-memory add that ptxas lowers to a compare-and-swap loop (Traits::cas_loop): the warp runs that loop.
void mark_unused_results(Kernel& k);

// The if-conversion step alone (re-computes reconvergence points).
void if_convert(Kernel& k);

}  // namespace stc
