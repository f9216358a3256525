"""wmma.smma.L (paper 004): sparse 16 x L chunks on the engine vs numpy, and the data-dependent latency vs
the PhaseLat model of stcsim.sparsity.extensor_latency."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest
from smma_l_ptx import chunk_arrays, smma_tile_ptx

from stcsim.sim import Engine, LaunchError, PtxError, SimFault
from stcsim.sparsity.extensor_latency import BlockSkip, chunk_latencies


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def random_chunk(rng: np.random.Generator, L: int, density: float) -> tuple[np.ndarray, np.ndarray]:
    """A boolean 16 x L mask (at least one non-zero) and non-zero fp16 values."""
    mask = rng.random((16, L)) < density
    mask[rng.integers(16), rng.integers(L)] = True
    values = (rng.uniform(0.5, 2.0, (16, L)) * rng.choice([-1, 1], (16, L))).astype(np.float16)
    return mask, values


def padded_width(mask: np.ndarray) -> int:
    return max(4, -(-int(mask.sum(axis=1).max()) // 4) * 4)


def run_chunk(mask, values, b, c, config=None, chain=1, b_layout="row", W=None):
    L = mask.shape[1]
    W = W or padded_width(mask)
    vals, coords = chunk_arrays(mask, values, W)
    eng = Engine(config)
    eng.load_ptx(smma_tile_ptx(L, W, chain, b_layout))
    blocks = np.split(b, L // 16)
    b_mem = b if b_layout == "row" else np.concatenate([np.ascontiguousarray(blk.T) for blk in blocks])
    arrays = [vals, coords, b_mem, c, np.full((16, 16), np.nan, np.float32)]
    ptrs = []
    for x in arrays:
        ptrs.append(eng.malloc(x.nbytes))
        eng.copy_to(ptrs[-1], x)
    stats = eng.launch(f"smma_l{L}_w{W}", 1, 32, ptrs)
    return eng.copy_from(ptrs[4], (16, 16), np.float32), stats


def reference(mask, values, b, c, chain=1):
    a = np.where(mask, values.astype(np.float64), 0.0)
    d = c.astype(np.float64)
    for _ in range(chain):
        d = d + a @ b.astype(np.float64)
    return d


@pytest.mark.parametrize("L", [16, 32, 48, 64])
@pytest.mark.parametrize("b_layout", ["row", "col"])
def test_chunk_mma_matches_numpy(rng: np.random.Generator, L: int, b_layout: str) -> None:
    mask, values = random_chunk(rng, L, 0.2)
    b = rng.standard_normal((L, 16)).astype(np.float16)
    c = rng.standard_normal((16, 16)).astype(np.float32)
    d, _ = run_chunk(mask, values, b, c, b_layout=b_layout)
    ref = reference(mask, values, b, c)
    np.testing.assert_allclose(d, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_a_wider_static_row_length_only_pads(rng: np.random.Generator) -> None:
    mask, values = random_chunk(rng, 32, 0.1)
    b = rng.standard_normal((32, 16)).astype(np.float16)
    c = rng.standard_normal((16, 16)).astype(np.float32)
    d, _ = run_chunk(mask, values, b, c, W=32)
    np.testing.assert_allclose(d, reference(mask, values, b, c), rtol=1e-5, atol=1e-5)


def _overlay(tmp_path: Path, reading: str) -> str:
    path = tmp_path / f"{reading}.yaml"
    path.write_text(f"extensor:\n  block_skip: {reading}\n")
    return f"titanv+extensor+{path}"


@pytest.mark.parametrize("reading", [r.value for r in BlockSkip])
@pytest.mark.parametrize("L", [16, 32, 48, 64])
def test_latency_is_phaselat_of_the_actual_coordinates(rng: np.random.Generator, tmp_path: Path, reading: str,
                                                       L: int) -> None:
    """Random chunks through the engine and through stcsim.sparsity.extensor_latency: the same latency."""
    config = _overlay(tmp_path, reading)
    for density in (0.05, 0.2, 0.5):
        mask, values = random_chunk(rng, L, density)
        b = rng.standard_normal((L, 16)).astype(np.float16)
        c = rng.standard_normal((16, 16)).astype(np.float32)
        _, stats = run_chunk(mask, values, b, c, config=config)
        expected = int(chunk_latencies(mask[None], BlockSkip(reading))[0])
        assert stats["extensor_smma_insts"] == 1
        assert stats["extensor_smma_latency_cycles"] == expected


def test_paper_66_cycle_example(rng: np.random.Generator, tmp_path: Path) -> None:
    """wmma.smma.16 with 4 non-zeros in each of 16 rows, literal reading: 16 x 4 + 2 = 66 cycles, and a
    dependent chain of n of them costs n x 66."""
    mask = np.zeros((16, 16), bool)
    for r in range(16):
        mask[r, rng.choice(16, 4, replace=False)] = True
    values = rng.uniform(0.5, 1.0, (16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 16)).astype(np.float16)
    c = rng.standard_normal((16, 16)).astype(np.float32)
    config = _overlay(tmp_path, "literal")
    runs = {n: run_chunk(mask, values, b, c, config=config, chain=n)[1] for n in (4, 8)}
    assert runs[4]["extensor_smma_mean_latency"] == 66
    # the final store drains through the L2 slices' port calendars, whose 16-cycle buckets can shift the
    # kernel's end by less than one bucket between the two launches
    assert abs(runs[8]["kernel_cycles"] - runs[4]["kernel_cycles"] - 4 * 66) < 16
    assert runs[4]["extensor_smma_latency_32_63"] == 0 and runs[4]["extensor_smma_latency_64_127"] == 4


def test_chain_results_match_numpy(rng: np.random.Generator) -> None:
    mask, values = random_chunk(rng, 48, 0.15)
    b = rng.standard_normal((48, 16)).astype(np.float16)
    c = rng.standard_normal((16, 16)).astype(np.float32)
    d, _ = run_chunk(mask, values, b, c, config="titanv+extensor", chain=3)
    ref = reference(mask, values, b, c, chain=3)
    np.testing.assert_allclose(d, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_timing_needs_the_extension_and_l_within_max_l(rng: np.random.Generator, tmp_path: Path) -> None:
    mask, values = random_chunk(rng, 64, 0.1)
    b = rng.standard_normal((64, 16)).astype(np.float16)
    c = np.zeros((16, 16), np.float32) + 1
    with pytest.raises(LaunchError, match=r"extensor\.enabled: true"):
        run_chunk(mask, values, b, c, config="titanv")
    small = tmp_path / "small.yaml"
    small.write_text("extensor:\n  max_l: 32\n")
    with pytest.raises(LaunchError, match=r"L = 64 exceeds extensor\.max_l = 32"):
        run_chunk(mask, values, b, c, config=f"titanv+extensor+{small}")


@pytest.mark.parametrize(
    ("bad", "message"),
    [(".l24.", r"L must be 16, 32, 48 or 64"), (".l80.", r"L must be 16, 32, 48 or 64"),
     (".w6.", r"W must be a positive multiple of 4"), (".w20.", r"exceeds the chunk width L = 16")],
)
def test_malformed_forms_are_ptx_errors(bad: str, message: str) -> None:
    ptx = smma_tile_ptx(16, 8).replace(".l16.w8.", f"{bad}w8." if bad.startswith(".l") else f".l16{bad}")
    with pytest.raises(PtxError, match=message):
        Engine().load_ptx(ptx)


def test_wrong_register_count_is_a_ptx_error() -> None:
    ptx = smma_tile_ptx(32, 8).replace("%b14, %b15}, {%c0", "%b14}, {%c0")
    with pytest.raises(PtxError, match=r"B \(L/16 wmma B fragments\) must be a \{\.\.\} of 16 registers"):
        Engine().load_ptx(ptx)


def test_bad_coordinates_are_a_sim_fault(rng: np.random.Generator) -> None:
    mask, values = random_chunk(rng, 16, 0.3)
    W = padded_width(mask)
    vals, coords = chunk_arrays(mask, values, W)
    row = int(np.argmax(mask.sum(axis=1) >= 2))
    coords[row, :2] = coords[row, 1::-1]  # descending
    eng = Engine()
    eng.load_ptx(smma_tile_ptx(16, W))
    arrays = [vals, coords, np.ones((16, 16), np.float16), np.zeros((16, 16), np.float32), np.zeros((16, 16),
                                                                                                     np.float32)]
    ptrs = []
    for x in arrays:
        ptrs.append(eng.malloc(x.nbytes))
        eng.copy_to(ptrs[-1], x)
    with pytest.raises(SimFault, match=rf"row {row}: coordinates must ascend"):
        eng.launch(f"smma_l16_w{W}", 1, 32, ptrs)
