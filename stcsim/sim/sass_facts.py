"""What the SASS ptxas writes says about a kernel's schedule: its loops' order, its copy grouping (issue 43).

A single-stage tile copy, ``smem[i] = global[i]`` in a loop, is issued by ptxas as groups of LDGs, each group
followed by the STSs of its values (``LDG, LDG, STS, STS, LDG x 3, STS x 3``): each group waits one memory
latency before the next group's loads issue, and ptxas picks the group size kernel by kernel (1 to 4 in the
tc-styles suite; `results/reference/h100_tc_styles_sass_mem_order.csv`). The PTX does not show it: its
loads and stores are independent, and the engine's load-first schedule would issue every load together.

Beyond the copy grouping, ptxas decides how far a loop's loads move above its Tensor Core instructions
(`tcs_mmasp_gmem`: 15 of a k-step's 21 loads before its first HMMA, where the PTX has 9) and in which order
they issue. `loop_orders` gives, per innermost loop, the order of its LDG / STS / LDS / LDSM / HMMA /
LDGSTS; the engine schedules a PTX loop with the same instructions in that order (the copy grouping then
only serves the loops it cannot match).

A loop whose trip count ptxas cannot see (``for (i = threadIdx.x; i < n; i += blockDim.x)``) is unrolled with
its first iterations peeled into straight-line blocks before the unrolled loop, and a short trip count runs
only those: `tcs_mma_lds`'s two copies per k-step run peeled blocks ``G S G S`` (each load waits for the store
before it, four memory latencies a k-step), never its unrolled ``GGSS`` loop. `copy_block_orders` gives the
order of those straight-line copy blocks; the engine schedules a PTX block of the same copies in it.

`copy_groups` reads a cubin (the ELF ptxas writes) without a disassembler: each function's ``.text.<name>``
section holds 16-byte instructions whose low 9 bits are the opcode (LDG, STS and BRA are all this needs) and
whose branch offset is split over two fields. The encoding was read off ``cuobjdump -sass`` of sm_90 cubins
(`tests/sim/test_sass_facts.py` checks the decoder against that listing); other architectures are not
decoded (their kernels keep the PTX-only schedule).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

SM_VERSIONS = (90,)
"""The architectures whose encoding the decoder was checked on (sm_90 and sm_90a)."""

_LDG, _STS, _BRA = 0x181, 0x188, 0x147  # opcode bits [0, 9) of the sm_90 encoding
# the classes of ptxas's loop order (Kernel::sass_loops): LDG, STS, LDS, LDSM, HMMA (dense and sparse), LDGSTS
_LOOP_CLASSES = {0x181: "G", 0x188: "S", 0x184: "L", 0x03B: "M", 0x03C: "H", 0x1AE: "C"}
_INSTRUCTION_BYTES = 16


@dataclass(frozen=True)
class SassInstruction:
    """One instruction of a function: its byte offset, its class ('G' LDG, 'S' STS, 'B' BRA, '' any other)
    and, for a branch, its target's byte offset."""

    offset: int
    kind: str
    target: int = -1


def text_sections(cubin: bytes) -> dict[str, bytes]:
    """The code of every function of an ELF64 cubin: its ``.text.<name>`` sections by function name.

    Raises ValueError when `cubin` is not a little-endian ELF64 file.
    """
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        raise ValueError("not a little-endian ELF64 cubin")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx]
    strtab = cubin[names[4]:names[4] + names[5]]
    out = {}
    for name_at, _type, _flags, _addr, offset, size, *_ in headers:
        name = strtab[name_at:strtab.index(b"\0", name_at)].decode("ascii", "replace")
        if name.startswith(".text."):
            out[name[len(".text."):]] = cubin[offset:offset + size]
    return out


def decode(code: bytes) -> list[SassInstruction]:
    """The instructions of one function's code, classed as LDG / STS / BRA / other, with branch targets."""
    out = []
    for at in range(0, len(code) - _INSTRUCTION_BYTES + 1, _INSTRUCTION_BYTES):
        lo, hi = struct.unpack_from("<QQ", code, at)
        op = lo & 0x1FF
        if op == _BRA:
            high = ((lo >> 34) | (hi << 30)) & ((1 << 48) - 1)  # offset / 4, bits [8, 56), sign at bit 47
            if high >> 47:
                high -= 1 << 48
            words = (high << 8) | ((lo >> 16) & 0xFF)
            out.append(SassInstruction(at, "B", at + _INSTRUCTION_BYTES + 4 * words))
        else:
            out.append(SassInstruction(at, {_LDG: "G", _STS: "S"}.get(op, ""), -1))
    return out


def memory_order(code: bytes) -> str:
    """The function's LDGs and STSs in code order ('G' / 'S'), as ``cuobjdump -sass`` lists them."""
    return "".join(i.kind for i in decode(code) if i.kind in ("G", "S"))


def innermost_loops(instructions: list[SassInstruction]) -> list[tuple[int, int]]:
    """(first, last) byte offsets of each loop no other loop lies inside: a backward branch's range."""
    loops = [(i.target, i.offset) for i in instructions if i.kind == "B" and 0 <= i.target <= i.offset]
    return [(a, b) for a, b in loops if not any((c, d) != (a, b) and a <= c and d <= b for c, d in loops)]


def copy_group(code: bytes) -> int:
    """ptxas's copy grouping of one function: the loads per group of its copy groups (a run of LDGs followed
    by an STS) in its innermost loops, rounded half up; 0 when its loops copy nothing."""
    loads = groups = 0
    for order in loop_order(code):
        for run in re.findall(r"G+(?=S)", re.sub("[^GS]", "", order)):
            loads += len(run)
            groups += 1
    return (2 * loads + groups) // (2 * groups) if groups else 0


def loop_order(code: bytes) -> list[str]:
    """ptxas's order of the memory and Tensor Core instructions in each innermost loop of one function, in
    code order: 'G' LDG, 'S' STS, 'L' LDS, 'M' LDSM, 'H' HMMA, 'C' LDGSTS (loops with none left out)."""
    classes = _classes(code)
    out = []
    for first, last in innermost_loops(decode(code)):
        order = "".join(classes[first // _INSTRUCTION_BYTES:last // _INSTRUCTION_BYTES + 1])
        if order:
            out.append(order)
    return out


def _classes(code: bytes) -> list[str]:
    """The loop-order class of every instruction of one function ('' for one of no class)."""
    return [_LOOP_CLASSES.get(struct.unpack_from("<Q", code, at)[0] & 0x1FF, "")
            for at in range(0, len(code) - _INSTRUCTION_BYTES + 1, _INSTRUCTION_BYTES)]


def copy_block_orders(code: bytes) -> list[str]:
    """ptxas's order of the LDGs and STSs of each straight-line copy block of one function outside its
    innermost loops, in code order: a basic block (cut after every branch and at every branch target) whose
    memory and Tensor Core instructions are LDGs and STSs only, at least one of each."""
    instructions = decode(code)
    classes = _classes(code)
    loops = innermost_loops(instructions)
    cuts = {0, len(code)}
    for i in instructions:
        if i.kind == "B":
            cuts.add(i.offset + _INSTRUCTION_BYTES)
            if 0 <= i.target <= len(code):
                cuts.add(i.target)
    edges = sorted(cuts)
    out = []
    for first, end in zip(edges, edges[1:], strict=False):
        if any(a <= first and end - _INSTRUCTION_BYTES <= b for a, b in loops):
            continue
        order = "".join(classes[first // _INSTRUCTION_BYTES:end // _INSTRUCTION_BYTES])
        if order and set(order) == {"G", "S"}:
            out.append(order)
    return out


def block_orders(cubin: bytes) -> dict[str, list[str]]:
    """Every function of an sm_90 cubin with a straight-line copy block outside its innermost loops -> ptxas's
    order of the blocks' loads and stores (`copy_block_orders`)."""
    return _per_function(cubin, copy_block_orders)


def _per_function(cubin: bytes, fact: Callable[[bytes], T]) -> dict[str, T]:
    """`fact` of every function of an sm_90 cubin, for the functions where it holds anything (a true value,
    or a list with a non-empty entry)."""
    out = {}
    for name, code in text_sections(cubin).items():
        value = fact(code)
        if any(value) if isinstance(value, list) else value:
            out[name] = value
    return out


def _control(code: bytes, at: int) -> tuple[int, int]:
    """(write barrier, wait mask) of the instruction at byte `at`: the scoreboard fields of its control
    bits (bits 105-127: stall 4, yield 1, write barrier 3, read barrier 3, wait mask 6, reuse 4; barrier
    7: none)."""
    control = struct.unpack_from("<Q", code, at + 8)[0] >> 41
    return (control >> 5) & 7, (control >> 11) & 0x3F


def loop_load_waits(code: bytes) -> list[str]:
    """Per innermost loop (as `loop_order`), the earlier LDGs of the same iteration each LDG issues after,
    from the scoreboard: an LDG sets a write barrier, and an instruction waiting on that barrier (its first
    consumer, say) holds the warp's in-order issue until the load's data is back, so every later LDG of the
    iteration issues after it (`spmm_csr`: `LDG LDG ... FFMA(first load) FFMA(second) ... LDG`, one memory
    latency per nonzero). One string per loop: per LDG in order, ';'-separated, the '.'-separated indices
    (among the loop's LDGs) of the loads first waited for since the previous LDG; '' where none ever is."""
    classes = _classes(code)
    out = []
    for first, last in innermost_loops(decode(code)):
        if not "".join(classes[first // _INSTRUCTION_BYTES:last // _INSTRUCTION_BYTES + 1]):
            continue
        pending: dict[int, list[int]] = {}
        waited: list[int] = []
        per_load: list[str] = []
        for at in range(first, last + _INSTRUCTION_BYTES, _INSTRUCTION_BYTES):
            barrier, mask = _control(code, at)
            for b in range(6):
                if mask >> b & 1:
                    waited.extend(pending.pop(b, []))
            if classes[at // _INSTRUCTION_BYTES] == "G":
                per_load.append(".".join(map(str, sorted(waited))))
                waited = []
                if barrier < 6:
                    pending.setdefault(barrier, []).append(len(per_load) - 1)
        out.append(";".join(per_load) if any(per_load) else "")
    return out


def loop_waits(cubin: bytes) -> dict[str, list[str]]:
    """Every function of an sm_90 cubin with a loop order (`loop_orders`) -> its loops' `loop_load_waits`,
    one per loop of `loop_orders` (functions whose loads never wait for each other left out)."""
    return _per_function(cubin, loop_load_waits)


def loop_orders(cubin: bytes) -> dict[str, list[str]]:
    """Every function of an sm_90 cubin with a loop that holds memory or Tensor Core instructions -> ptxas's
    order of them per innermost loop (`loop_order`)."""
    return _per_function(cubin, loop_order)


def copy_groups(cubin: bytes) -> dict[str, int]:
    """Every function of an sm_90 cubin whose innermost loops copy global to shared memory -> its copy
    grouping (`copy_group`)."""
    return _per_function(cubin, copy_group)
