"""Microbenchmarks of the sparse Tensor Core extensions, on the overlays that enable them.

SHMMA (paper 001): dependent chains pin stc.smma_kK.latency and independent streams its issue interval, at
K = 2, 4, 8, on v100+stc (26 cycles at K = 4) and v100+stc-pingpong (20); the dense wmma.mma on the same
overlays pins paper 001's 40 and 34. wmma.smma.L (paper 004): a chain on a seeded random chunk at each L
pins the data-dependent latency to stcsim.sparsity.extensor_latency's PhaseLat for the config's block-skip
reading, and the paper's example (4 non-zeros in each of 16 rows of a wmma.smma.16) to 66 cycles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from benchmarks.micro.contract import Bench, Check, Result, case
from benchmarks.micro.launch import flat, per_step, stat_per_step
from benchmarks.micro.tensor import TENSOR_OPS, tensor_runner
from stcsim.sim import Engine
from stcsim.sparsity.extensor_latency import BlockSkip, chunk_latencies

STC_CONFIGS: tuple[str, ...] = ("v100+stc", "v100+stc-pingpong")
EXTENSOR_CONFIGS: tuple[str, ...] = ("titanv+extensor",)
K_STEPS = 8
PAPER_001 = {"v100+stc": {"sparse": 26, "dense": 40}, "v100+stc-pingpong": {"sparse": 20, "dense": 34}}
"""Paper 001 Fig. 13: one 16x16x16 warp op (K = 4) in cycles, sparse and dense, per overlay."""
PAPER_004_EXAMPLE = 66
"""Paper 004: wmma.smma.16 with 4 non-zeros in each of 16 rows costs 16 x 4 + 2 cycles."""
_PAD = 0xFF


def _shmma(k: int, stream: bool) -> Callable[[str], Result]:
    bench_id = f"{'ii' if stream else 'lat'}.smma.k{k}"
    key = f"stc.smma_k{k}.{'issue_interval' if stream else 'latency'}"

    def runner(config: str) -> Result:
        cfg = flat(config)
        instr = f"wmma.mma.sync.aligned.row.row.m16n16k16.smma.k{k}.f32.f32"
        clock, cycles, r1, r2 = per_step(config, "smma_chain", K_STEPS, instr=instr, stream=stream)
        expected = float(cfg[key])
        checks = {"gpu_sim_cycle": Check(cycles, expected),
                  "stc_smma_insts per step": Check(stat_per_step(r1, r2, "stc_smma_insts", K_STEPS), 1.0)}
        if k == 4:
            checks["paper 001 Fig. 13"] = Check(clock, PAPER_001[config]["sparse"])
        return Result(bench_id, config, clock, expected, "cycles", checks=checks)

    return runner


def _dense_on_stc(config: str) -> Result:
    """The dense f32 wmma.mma on the sparse Tensor Core: 40, or 34 with the ping-pong B buffer."""
    cfg = flat(config)
    (wmma_f32,) = (t for t in TENSOR_OPS if t.name == "wmma.f32")
    r = tensor_runner(wmma_f32, stream=False)(config)  # the runner of lat.wmma.f32
    key = "stc.dense_pingpong.latency" if cfg["stc.pingpong"] else "tensor.wmma_m16n16k16_f32.latency"
    assert r.value is not None
    return Result("lat.smma.dense", config, r.value, float(cfg[key]), "cycles",
                  checks={"paper 001 Fig. 13": Check(r.value, PAPER_001[config]["dense"])})


def _chunk(L: int, seed: int) -> np.ndarray:
    """A seeded random 16 x L non-zero mask with rows of different lengths (some empty)."""
    rng = np.random.default_rng(seed)
    mask = rng.random((16, L)) < rng.uniform(0.0, 0.4, (16, 1))
    mask[0, rng.integers(L)] = True
    return mask


def _paper_chunk() -> np.ndarray:
    rng = np.random.default_rng(4)
    mask = np.zeros((16, 16), bool)
    for r in range(16):
        mask[r, rng.choice(16, 4, replace=False)] = True
    return mask


def _chunk_args(mask: np.ndarray, W: int) -> Callable[[Engine, int], list[int]]:
    vals = np.zeros((16, W), np.float16)
    coords = np.full((16, W), _PAD, np.uint8)
    for r in range(16):
        cols = np.flatnonzero(mask[r])
        vals[r, : cols.size] = 1.0
        coords[r, : cols.size] = cols

    def build(eng: Engine, out: int) -> list[int]:
        ptrs = [eng.malloc(x.nbytes) for x in (vals, coords)]
        for p, x in zip(ptrs, (vals, coords), strict=True):
            eng.copy_to(p, x)
        return [out, *ptrs]

    return build


def _smma_l(L: int, paper: bool = False) -> Callable[[str], Result]:
    bench_id = "lat.smma.l16.paper" if paper else f"lat.smma.l{L}"

    def runner(config: str) -> Result:
        cfg = flat(config)
        mask = _paper_chunk() if paper else _chunk(L, seed=L)
        W = max(4, -(-int(mask.sum(axis=1).max()) // 4) * 4)
        clock, cycles, r1, r2 = per_step(config, "smma_l_chain", K_STEPS, L=L, W=W, args=_chunk_args(mask, W))
        expected = float(chunk_latencies(mask[None], BlockSkip(cfg["extensor.block_skip"]))[0])
        checks = {"gpu_sim_cycle": Check(cycles, expected),
                  "mean latency stat": Check(r2.stat("extensor_smma_mean_latency"), expected)}
        if paper:
            checks["paper 004 example"] = Check(clock, PAPER_004_EXAMPLE)
        note = f"L = {L}, W = {W}, {int(mask.sum())} non-zeros, reading {cfg['extensor.block_skip']}"
        return Result(bench_id, config, clock, expected, "cycles", checks=checks, note=note)

    return runner


_PHASELAT_KEYS = ("extensor.block_skip", "extensor.min_block_cycles", "extensor.phase_overhead_cycles",
                  "extensor.nnz_per_phase")


def _cases() -> Iterator[Bench]:
    """The cases of this group, in the order of the report."""
    for k in (2, 4, 8):
        yield case(f"lat.smma.k{k}", "sparse", f"SHMMA .k{k} latency: dependent chain = "
                   f"stc.smma_k{k}.latency (set pipeline; K = 4: paper 001's 26 / 20)",
                   (f"stc.smma_k{k}.latency",), "smma_chain", _shmma(k, False), configs=STC_CONFIGS)
        yield case(f"ii.smma.k{k}", "sparse", f"SHMMA .k{k} issue interval: independent stream",
                   (f"stc.smma_k{k}.issue_interval",), "smma_chain", _shmma(k, True), configs=STC_CONFIGS)
    yield case("lat.smma.dense", "sparse", "dense wmma.mma f32 on the sparse Tensor Core: 40, with ping-pong "
               "34 (paper 001 Fig. 13)", ("tensor.wmma_m16n16k16_f32.latency", "stc.dense_pingpong.latency"),
               "tensor_chain", _dense_on_stc, configs=STC_CONFIGS)
    for L in (16, 32, 48, 64):
        yield case(f"lat.smma.l{L}", "sparse", f"wmma.smma.{L} latency on a seeded random chunk = PhaseLat "
                   "of its coordinates (stcsim.sparsity.extensor_latency)", _PHASELAT_KEYS, "smma_l_chain",
                   _smma_l(L), configs=EXTENSOR_CONFIGS)
    yield case("lat.smma.l16.paper", "sparse", "paper 004's example: wmma.smma.16, 4 non-zeros in each of 16 "
               "rows = 66", ("extensor.min_block_cycles", "extensor.phase_overhead_cycles"), "smma_l_chain",
               _smma_l(16, paper=True), configs=EXTENSOR_CONFIGS)


CASES: tuple[Bench, ...] = tuple(_cases())
