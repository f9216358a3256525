"""SparseRT's code generator (paper 003): fp32 SpMM PTX specialised to one sparse weight matrix.

``D (M x N) = W (M x K) @ X (K x N)``, X and D dense row-major fp32, W known at generation time. The kernel
follows the load-balanced plan of stcsim.kernels.codegen.sparsert_plan: thread (group g, lane t) of block
(bx, by) computes column ``bx * columns + t`` of the rows of M-block ``by``, over group g's K range. Its code
is straight-line, fully unrolled over the non-zeros of its (block, group) segment: each column k of W the
segment reads is one ``ld.global`` of X[k, col] (its address an immediate offset, N being fixed too), each
non-zero one ``fma.rn.f32`` into a statically named accumulator register with the weight either an
immediate operand (``0f...`` literal) or a load from a ``.const`` array (``weights=const``; ``auto`` picks
``.const`` while the module's constant data fit the 64 KiB bank ptxas allows, as the paper does). A warp
finds its segment with a binary branch tree on ``ctaid.y * groups + group``. Groups 1.. hand their partial
sums to group 0 through shared memory; group 0 adds them and stores every row of the block (ragged N: loads
read a clamped column, stores are predicated).

The PTX text is cached in memory and on disk (``$STCSIM_SPARSERT_CACHE``, default
``~/.cache/stcsim/sparsert``), keyed by the SHA-256 of the weights, the shape and the parameters;
`generate_cached` says how long the generation took and whether it was a cache hit.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

import jinja2
import numpy as np

from stcsim.kernels.codegen.sparsert_plan import Plan, Segment, SplitParams, make_plan
from stcsim.sparsity.csr import CSRFormat

ENTRY = "spmm_sparsert_f32"
CONST_BANK_BYTES = 64 * 1024
"""ptxas refuses a module whose global constant data exceed one 64 KiB bank."""
LOAD_BATCH = 32
"""Columns of X loaded ahead of their FMAs (registers %x0..)."""
WEIGHT_BATCH = 16
"""Weights loaded from .const ahead of their FMAs (registers %w0..)."""
CACHE_ENV = "STCSIM_SPARSERT_CACHE"
TEMPLATE_PATH = Path(__file__).with_name("sparsert_spmm.ptx.j2")


@dataclass(frozen=True)
class Generated:
    """A generated kernel: its PTX (file path and text), where its weights live (``imm`` or ``const``), the
    seconds it took to generate (or to read from the disk cache) and whether it came from the disk cache."""

    path: Path
    text: str
    weights: str
    seconds: float
    cached: bool

    @property
    def lines(self) -> int:
        """Lines of PTX (about one instruction each)."""
        return self.text.count("\n")


def f32_literal(value: float) -> str:
    """The PTX ``0fXXXXXXXX`` literal of a float32."""
    return f"0f{int(np.float32(value).view(np.uint32)):08X}"


def weight_mode(params: SplitParams, nnz: int) -> str:
    """``imm`` or ``const`` for a matrix of `nnz` non-zeros (``auto``: const when the array fits the bank)."""
    if params.weights != "auto":
        return params.weights
    return "const" if 4 * max(nnz, 1) <= CONST_BANK_BYTES else "imm"


class _Emitter:
    """Builds the body of one kernel from a plan (one instance per generation)."""

    def __init__(self, plan: Plan, n: int, weights: str) -> None:
        self.plan, self.n, self.weights = plan, n, weights
        self.lines: list[str] = []
        self.const_values: list[str] = []
        self.labels = 0

    def emit(self, line: str) -> None:
        self.lines.append(line)

    def label(self) -> str:
        self.labels += 1
        return f"$L_{self.labels}"

    def dispatch(self, lo: int, hi: int) -> None:
        """Binary branch tree from the segment id in %r8 to the labels SEG_lo .. SEG_{hi-1}."""
        if hi - lo == 1:
            self.emit(f"\tbra.uni $SEG_{lo};")
            return
        mid = (lo + hi) // 2
        left = self.label()
        self.emit(f"\tsetp.lt.u32 %p2, %r8, {mid};")
        self.emit(f"\t@%p2 bra.uni {left};")
        self.dispatch(mid, hi)
        self.emit(f"{left}:")
        self.dispatch(lo, mid)

    def weight(self, value: float, slot: int) -> str:
        """The operand of one weight: an immediate, or %w<slot> loaded (here) from the .const array."""
        if self.weights == "imm":
            return f32_literal(value)
        self.emit(f"\tld.const.f32 %w{slot}, [sparsert_w+{4 * len(self.const_values)}];")
        self.const_values.append(f32_literal(value))
        return f"%w{slot}"

    def accumulate(self, seg: Segment) -> set[int]:
        """The unrolled loads and FMAs of one segment; returns the rows it wrote."""
        written: set[int] = set()
        stride = 4 * self.n
        for start in range(0, len(seg.columns), LOAD_BATCH):
            batch = seg.columns[start : start + LOAD_BATCH]
            for i, (k, _) in enumerate(batch):
                self.emit(f"\tld.global.f32 %x{i}, [%rd4+{k * stride}];")
            fmas = [(i, r, v) for i, (_, entries) in enumerate(batch) for r, v in entries]
            for first in range(0, len(fmas), WEIGHT_BATCH):
                chunk = fmas[first : first + WEIGHT_BATCH]
                operands = [self.weight(v, slot) for slot, (_, _, v) in enumerate(chunk)]
                for (i, r, _), w in zip(chunk, operands, strict=True):
                    if r in written:
                        self.emit(f"\tfma.rn.f32 %acc{r}, %x{i}, {w}, %acc{r};")
                    else:
                        self.emit(f"\tmul.rn.f32 %acc{r}, %x{i}, {w};")
                        written.add(r)
        return written

    def segment(self, block: int, group: int) -> None:
        """One (block, group) segment: accumulate, then hand over (group > 0) or reduce and store (0)."""
        plan, groups = self.plan, self.plan.params.groups
        self.emit(f"$SEG_{block * groups + group}:")
        written = self.accumulate(plan.segment(block, group))
        row_bytes = 4 * plan.params.columns
        if group > 0:
            for r in sorted(written):
                offset = ((group - 1) * plan.max_rows + r) * row_bytes
                self.emit(f"\tst.shared.f32 [%r6+{offset}], %acc{r};")
            self.emit("\tbar.sync 0;")
            self.emit("\tret;")
            return
        if groups > 1:
            self.emit("\tbar.sync 0;")
        for g in range(1, groups):
            for r in sorted(plan.segment(block, g).rows):
                offset = ((g - 1) * plan.max_rows + r) * row_bytes
                if r in written:
                    self.emit(f"\tld.shared.f32 %x0, [%r6+{offset}];")
                    self.emit(f"\tadd.rn.f32 %acc{r}, %acc{r}, %x0;")
                else:
                    self.emit(f"\tld.shared.f32 %acc{r}, [%r6+{offset}];")
                    written.add(r)
        row0 = plan.row_starts[block]
        for r in range(plan.block_rows(block)):
            value = f"%acc{r}" if r in written else "%zero"
            self.emit(f"\t@%p1 st.global.f32 [%rd6+{(row0 + r) * 4 * self.n}], {value};")
        self.emit("\tret;")


def _template() -> jinja2.Template:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.from_string(TEMPLATE_PATH.read_text())


def render(plan: Plan, n: int, weights: str = "imm") -> str:
    """The PTX module of a plan for N = `n` columns, weights as immediates (``imm``) or in .const."""
    if n < 1:
        raise ValueError(f"N must be >= 1, got {n}")
    if weights not in ("imm", "const"):
        raise ValueError(f"weights must be imm or const here, got {weights!r}")
    em = _Emitter(plan, n, weights)
    segments = plan.blocks * plan.params.groups
    em.dispatch(0, segments)
    for b in range(plan.blocks):
        for g in range(plan.params.groups):
            em.segment(b, g)
    return _template().render(
        entry=ENTRY,
        params=plan.params,
        m=plan.m,
        k=plan.k,
        n=n,
        nnz=sum(s.nnz for s in plan.segments),
        acc_regs=max(plan.max_rows, 1),
        const_values=em.const_values,
        shared_floats=plan.shared_bytes() // 4,
        log2_columns=plan.params.columns.bit_length() - 1,
        load_regs=LOAD_BATCH,
        weight_regs=WEIGHT_BATCH,
        body="\n".join(em.lines),
    )


def weights_key(csr: CSRFormat, n: int, params: SplitParams) -> str:
    """SHA-256 (hex) of the weights (shape, CSR arrays), N, the parameters and the template."""
    h = hashlib.sha256()
    h.update(repr((csr.shape, n, params)).encode())
    for array in (csr.indptr, csr.indices, csr.values):
        h.update(np.ascontiguousarray(array).tobytes())
    h.update(TEMPLATE_PATH.read_bytes())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()


def cache_dir() -> Path:
    """Where generated PTX is kept on disk ($STCSIM_SPARSERT_CACHE, default ~/.cache/stcsim/sparsert)."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "stcsim" / "sparsert")


_MEMORY: dict[str, Generated] = {}


def generate_cached(csr: CSRFormat, n: int, params: SplitParams) -> Generated:
    """The kernel of these weights, N and parameters: from the in-memory or on-disk cache, else generated
    (plan and render) and written there. `seconds` is the generation time (the lookup time on a hit)."""
    start = time.perf_counter()
    key = weights_key(csr, n, params)
    if key in _MEMORY:
        return _MEMORY[key]
    path = cache_dir() / f"{key[:32]}.ptx"
    weights = weight_mode(params, int(csr.indptr[-1]))
    if path.is_file():
        text, cached = path.read_text(), True
    else:
        text, cached = render(make_plan(csr, params), n, weights), False
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(text)
        partial.replace(path)
    found = Generated(path, text, weights, time.perf_counter() - start, cached)
    _MEMORY[key] = found
    return found
