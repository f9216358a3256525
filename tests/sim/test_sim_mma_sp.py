"""2:4 sparse ``mma.sp`` m16n8k32 against numpy (tests/sim/cuda/mma_sp.cu), its decode errors and its timing.

The host prunes random fp16 16 x 32 tiles to 2:4 (``stcsim.sparsity.NM``) and packs them with
``stcsim.sparsity.mma_sp`` (compressed values and metadata words: the layout verified on an H100); the kernel
places the A, B, C fragments per the PTX ISA, takes each lane's metadata register from memory and stores D.
Lanes the sparsity selector does not name get random metadata, which the instruction must ignore.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from simkit import CUDA_DIR, assert_bits, kernels

from stcsim.sparsity.mma_sp import lane_metadata, pack_m16n8k32
from stcsim.sparsity.nm import NM

TILES = 4  # one tile per block, one warp per block


@pytest.fixture(scope="module")
def k():
    return kernels("mma_sp")


def tile_values(rng: np.random.Generator, shape: tuple[int, ...], exact: bool) -> np.ndarray:
    """fp16 values exact in bf16 too: small integers and halves, or random 8-bit significands."""
    if exact:
        return (rng.integers(-6, 7, size=shape) / 2).astype(np.float16)
    scale = 2.0 ** rng.integers(-12, -3, size=shape)
    return (rng.integers(-128, 129, size=shape) * scale).astype(np.float16)


def sparse_tiles(
    rng: np.random.Generator, exact: bool, sparsity: float = 0.5
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TILES random 2:4 tiles: dense A (TILES x 16 x 32), compressed A (x 16 x 16), metadata (x 16 words)."""
    dense, comp, meta = [], [], []
    for _ in range(TILES):
        w = tile_values(rng, (16, 32), exact)
        w[w == 0] = 1  # every kept element nonzero, so the metadata alone decides where each one lands
        mask = NM(2, 4).prune(w, sparsity)
        ops = pack_m16n8k32(w, mask)
        want = np.where(mask, w, np.float16(0))
        assert np.array_equal(ops.to_dense(), want)  # the host encoder round-trips
        dense.append(want)
        comp.append(ops.tile_values(0, 0))
        meta.append(ops.metadata[0, 0])
    return np.stack(dense), np.stack(comp), np.stack(meta)


def lane_words(rng: np.random.Generator, meta: np.ndarray, selector: int) -> np.ndarray:
    """Metadata registers of the 32 lanes of each tile; the lanes `selector` does not name hold junk."""
    out = rng.integers(0, 2**32, size=(len(meta), 32), dtype=np.uint64).astype(np.uint32)
    for t, words in enumerate(meta):
        used = lane_metadata(words, selector)
        lanes = [4 * g + 2 * selector + j for g in range(8) for j in range(2)]
        out[t, lanes] = used[lanes]
    return out


def as_bf16_bits(x: np.ndarray) -> np.ndarray:
    """bf16 bit patterns of values exactly representable in bf16."""
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def in_bits(x: np.ndarray, ab: str) -> np.ndarray:
    return as_bf16_bits(x) if ab == "bf16" else x.view(np.uint16)


def assert_close(got: np.ndarray, want: np.ndarray, rel: float, what: str) -> None:
    """max |got - want| <= rel x max |want| (per launch)."""
    err = float(np.max(np.abs(got.astype(np.float64) - want)))
    scale = float(np.max(np.abs(want)))
    assert err <= rel * scale, f"{what}: max error {err} > {rel} x max |ref| {scale}"


def run_case(
    k, rng: np.random.Generator, name: str, ab: str, acc: str, selector: int, exact: bool, swap: bool = False
) -> None:
    """Launches `name` on TILES fresh tiles and compares D with A_dense @ B + C."""
    dense, comp, meta = sparse_tiles(rng, exact, sparsity=0.5 if exact else 0.625)
    if swap:  # the two kept elements of every chunk in descending column order (values and indices)
        comp = comp.reshape(TILES, 16, 8, 2)[..., ::-1].reshape(TILES, 16, 16)
        nib = (meta[..., None] >> (4 * np.arange(8, dtype=np.uint32))) & 0xF
        nib = ((nib & 3) << 2) | (nib >> 2)
        meta = np.bitwise_or.reduce(nib << (4 * np.arange(8, dtype=np.uint32)), axis=-1).astype(np.uint32)
    B = tile_values(rng, (TILES, 32, 8), exact)
    if exact:
        C = rng.integers(-40, 40, size=(TILES, 16, 8)).astype(np.float32)
    else:
        C = rng.standard_normal((TILES, 16, 8)).astype(np.float32)
    adt = np.float32 if acc == "f32" else np.float16
    c_arr = C if acc == "f32" else C.astype(np.float16).view(np.uint16)
    c_val = C.astype(adt).astype(np.float64)
    D = np.zeros((TILES, 16, 8), np.float32 if acc == "f32" else np.uint16)
    args = (in_bits(comp, ab), in_bits(B, ab), c_arr, lane_words(rng, meta, selector), D)
    *_, got = k.launch(name, TILES, 32, *args, np.int32(selector))
    got_v = got if acc == "f32" else got.view(np.float16)
    want = dense.astype(np.float64) @ B.astype(np.float64) + c_val
    if exact:
        assert_bits(got_v, want.astype(adt), name)
    else:
        assert_close(got_v, want, 1e-3 if acc == "f32" else 2e-3, name)


CASES = [  # kernel, input type, accumulator type
    ("mma_sp_f16_f32", "f16", "f32"),
    ("mma_sp_bf16_f32", "bf16", "f32"),
    ("mma_sp_f16_f16", "f16", "f16"),
]


@pytest.mark.parametrize(("name", "ab", "acc"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("selector", [0, 1])
@pytest.mark.parametrize("exact", [True, False], ids=["exact", "random"])
def test_mma_sp_matches_dense_product(k, rng, name, ab, acc, selector, exact):
    run_case(k, rng, name, ab, acc, selector, exact)


@pytest.mark.parametrize("selector", [0, 1])
def test_mma_sp_reads_unordered_metadata(k, rng, selector):
    """Plain .sp (unlike .sp::ordered_metadata) lets a chunk list its two columns in descending order."""
    run_case(k, rng, "mma_sp_f16_f32", "f16", "f32", selector, exact=True, swap=True)


@pytest.mark.sim_only
def test_mma_sp_ordered_metadata_spelling(rng):
    """The .sp::ordered_metadata spelling (a '::' qualifier inside the opcode) runs like .sp."""
    from stcsim.sim import Engine

    text = (CUDA_DIR / "mma_sp.ptx").read_text().replace("mma.sp.sync", "mma.sp::ordered_metadata.sync")
    eng = Engine()
    eng.load_ptx(text)
    dense, comp, meta = sparse_tiles(rng, exact=True)
    B = tile_values(rng, (TILES, 32, 8), True)
    C = np.zeros((TILES, 16, 8), np.float32)
    bufs = [comp.view(np.uint16), B.view(np.uint16), C, lane_words(rng, meta, 0), np.zeros_like(C)]
    addrs = [eng.malloc(b.nbytes) for b in bufs]
    for a, b in zip(addrs, bufs, strict=True):
        eng.copy_to(a, b)
    eng.launch("mma_sp_f16_f32", TILES, 32, [*addrs, 0])
    got = eng.copy_from(addrs[-1], C.shape, np.float32)
    assert_bits(got, (dense.astype(np.float64) @ B.astype(np.float64)).astype(np.float32), "ordered")


# ---- decode errors -----------------------------------------------------------------------------------------
ERROR_KERNEL = """.version 8.0
.target sm_80
.address_size 64

.visible .entry k()
{{
  .reg .b32 %r<16>;
  .reg .f32 %f<12>;
  {body}
  ret;
}}
"""
SP = "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32"
FRAGS = "{%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, {%r5, %r6, %r7, %r8}, {%f5, %f6, %f7, %f8}"


@pytest.mark.sim_only
@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            f"{SP} {FRAGS}, %r9, 2;",
            "takes sparsity selector 0 or 1 (threads T0,T1 or T2,T3 of each group of four)",
        ),
        (f"{SP} {FRAGS}, 0x44444444, 0;", "mma.sp metadata operand e must be a 32-bit register"),
        (f"{SP} {FRAGS}, %r9, %r10;", "mma.sp sparsity selector f must be an integer constant"),
        (f"{SP} {FRAGS};", f"'{SP}' takes 6 operands, got 4"),
        (
            f"{SP} {{%f1, %f2, %f3, %f4}}, {{%r1, %r2, %r3, %r4}}, {{%r5, %r6}}, {{%f5, %f6, %f7, %f8}}, "
            "%r9, 0;",
            "B must be a {..} of 4 registers",
        ),
        (
            "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f16 {%f1, %f2, %f3, %f4}, "
            "{%r1, %r2, %r3, %r4}, {%r5, %r6, %r7, %r8}, {%r10, %r11}, %r9, 0;",
            "mma.sp .m16n8k32 needs the same .dtype and .ctype (got .f32 and .f16)",
        ),
        (
            "mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2}, "
            "{%r5, %r6}, {%f5, %f6, %f7, %f8}, %r9, 0;",
            "unsupported mma.sp shape (only .m16n8k32 with .f16/.bf16)",
        ),
        (
            "mma.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 " + FRAGS + ";",
            "unsupported mma shape .m16n8k32 without .sp",
        ),
    ],
    ids=[
        "selector-2",
        "immediate-metadata",
        "register-selector",
        "no-metadata",
        "short-b",
        "mixed-acc",
        "sparse-k16",
        "dense-k32",
    ],
)
def test_malformed_mma_sp_is_rejected(body, message):
    from stcsim.sim import Engine, PtxError

    with pytest.raises(PtxError) as err:
        Engine().load_ptx(ERROR_KERNEL.format(body=body))
    assert str(err.value).startswith("<ptx text>:9: "), str(err.value)
    assert message in str(err.value)


# ---- timing ------------------------------------------------------------------------------------------------
MMA = "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32"
AB = "{%a1, %a2, %a3, %a4}, {%b1, %b2, %b3, %b4}"
Z = "{%z0, %z1, %z2, %z3}"


def acc(j: int) -> str:
    """Accumulator set j: registers %acc4j .. %acc4j+3."""
    return "{" + ", ".join(f"%acc{4 * j + r}" for r in range(4)) + "}"


def timing_kernel(n: int, step: Callable[[int], str]) -> str:
    """A one-warp kernel running step(0) .. step(n - 1) between two %clock64 reads; out[0] = the delta.

    %a1-4 / %b1-4 hold A and B (zeros), %z a zero C, %e1 the metadata (index pairs (0, 1)), %acc0-31 eight
    accumulator sets.
    """
    init = [f"mov.b32 %a{j}, 0;\n  mov.b32 %b{j}, 0;" for j in range(1, 5)]
    init += [f"mov.f32 %z{j}, 0f00000000;" for j in range(4)]
    init += [f"mov.f32 %acc{j}, 0f00000000;" for j in range(32)]
    body = "\n  ".join(step(i) for i in range(n))
    nl = "\n  "
    return f""".version 8.0
.target sm_80
.address_size 64

.visible .entry t(.param .u64 out)
{{
  .reg .b64 %rd<5>;
  .reg .b32 %a<5>;
  .reg .b32 %b<5>;
  .reg .b32 %e<2>;
  .reg .b32 %t<2>;
  .reg .f32 %z<4>;
  .reg .f32 %acc<32>;
  ld.param.u64 %rd1, [out];
  {nl.join(init)}
  mov.b32 %e1, 0x44444444;
  mov.u64 %rd2, %clock64;
  {body}
  mov.u64 %rd3, %clock64;
  sub.s64 %rd4, %rd3, %rd2;
  st.global.u64 [%rd1], %rd4;
  ret;
}}
"""


def chain(i: int) -> str:
    """D = A x B + D: each step waits for the one before."""
    return f"{MMA} {acc(0)}, {AB}, {acc(0)}, %e1, 0;"


def stream(i: int) -> str:
    """Distinct D in eight rotating sets, shared C: independent steps."""
    return f"{MMA} {acc(i % 8)}, {AB}, {Z}, %e1, 1;"


def through_metadata(i: int) -> str:
    """Independent of the previous D except through the metadata: e = (bits of D[0]) | 0x44444444."""
    return f"{MMA} {acc(0)}, {AB}, {Z}, %e1, 0;\n  mov.b32 %t1, %acc0;\n  or.b32 %e1, %t1, 0x44444444;"


def clock_delta(config: str, n: int, step: Callable[[int], str]) -> int:
    from stcsim.sim import Engine

    eng = Engine(config)
    (name,) = eng.load_ptx(timing_kernel(n, step))
    out = eng.malloc(8)
    eng.launch(name, 1, 32, [out])
    return int(eng.copy_from(out, 1, np.uint64)[0])


def per_step(config: str, step: Callable[[int], str], k: int = 8) -> float:
    """The %clock64 cost of one more step: (delta(2k) - delta(k)) / k, as benchmarks/micro does."""
    return (clock_delta(config, 2 * k, step) - clock_delta(config, k, step)) / k


def key(config: str, name: str) -> float:
    from stcsim.config import load_config

    return float(dict(load_config(config).flat())[name])


@pytest.mark.sim_only
@pytest.mark.parametrize("config", ["h100", "a100"])
def test_dependent_chain_costs_the_configured_latency(config):
    assert per_step(config, chain) == key(config, "tensor.mma_sp_m16n8k32_f32.latency")


@pytest.mark.sim_only
@pytest.mark.parametrize("config", ["h100", "a100"])
def test_independent_stream_costs_the_issue_interval(config):
    assert per_step(config, stream) == key(config, "tensor.mma_sp_m16n8k32_f32.issue_interval")


@pytest.mark.sim_only
def test_metadata_register_is_a_source():
    want = key("h100", "tensor.mma_sp_m16n8k32_f32.latency") + 2 * key("h100", "units.int.latency")
    assert per_step("h100", through_metadata) == want


@pytest.mark.sim_only
def test_mma_sp_is_refused_on_a_config_without_it():
    from stcsim.sim import Engine, LaunchError

    eng = Engine("v100")
    (name,) = eng.load_ptx(timing_kernel(1, chain))
    refused = r"uses 'mma\.sp\.sync.*which config 'Tesla V100' has no timing for.*tensor\.mma_sp_m16n8k32_f32"
    with pytest.raises(LaunchError, match=refused):
        eng.launch(name, 1, 32, [eng.malloc(8)])
