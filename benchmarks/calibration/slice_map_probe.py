"""Which L2 slice each 256-byte unit of a 2 MiB page lives on, measured on silicon by atomic contention.

Two halves of a grid hammer one word each with whole-warp same-address reductions (slice_probe.cu). An L2
slice's atomic unit serves one such round at a time, so a launch whose two words share a slice takes about
twice as long as one whose words are on two slices. Unit u (of the interleave, 256 B: the atomics probe's
evidence, configs/h100.yaml l2.slice_interleave_bytes) is compared with one representative of every slice
found so far (all of them, so a unit matching two is reported); a unit matching none is a new slice.
Four 2 MiB pages are mapped whole (the GPU's large page: its physical offsets are its virtual ones); how
their partitions into slices differ shows what the page's frame (unknown here) does to the map.
The suite's histogram_atomic (4096 bins, n = 1M) is timed with its bins at 64 offsets
of the page, to show how much the slice map moves that kernel.

Writes under --out: slice_map.csv (page, unit, slice, matches, and the times), slice_pairs.csv (the
same-unit and first-pair times used for the threshold), pair_matrix.npy (microseconds of every pair of the
first --matrix units: the contention levels), rep_times.npy (each mapped unit's times against the
representatives) and histogram_offsets.csv; every row carries date,
gpu, driver and the SM clock.

    python -m benchmarks.calibration.slice_map_probe --out $OUT/slices           # GPU machine
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.calibration.silicon_memory import KERNELS, SMS, gpu_meta
from benchmarks.calibration.silicon_probes import compile_cubin

SRC = Path(__file__).resolve().parent / "slice_probe.cu"
PAGE = 2 << 20
UNIT = 256
GRID, BLOCK, ITERS = SMS * 2, 128, 2


def write_csv(rows: list[dict], path: Path, meta: dict[str, str]) -> None:
    """Rows plus the GPU metadata columns, written atomically."""
    df = pd.DataFrame(rows).assign(**meta)
    tmp = path.with_suffix(".tmp")
    df.to_csv(tmp, index=False, float_format="%.5g")
    tmp.replace(path)


class PairTimer:
    """Times pair_red launches back to back on one stream (an event between launches, one sync per batch)."""

    def __init__(self, cubin: Path, base: int) -> None:
        import cupy

        self.cp = cupy
        self.fn = cupy.RawModule(path=str(cubin)).get_function("pair_red")
        self.base = base

    def times_us(self, pairs: list[tuple[int, int]]) -> np.ndarray:
        """Microseconds of one launch per (byte offset a, byte offset b) pair from the page base.

        A batch's first launch runs slow (about +20 us), so an untimed launch leads every batch."""
        cp = self.cp
        events = [cp.cuda.Event() for _ in range(len(pairs) + 1)]
        self._launch(0, 0)
        events[0].record()
        for i, (a, b) in enumerate(pairs):
            self._launch(a, b)
            events[i + 1].record()
        events[-1].synchronize()
        return np.array([cp.cuda.get_elapsed_time(events[i], events[i + 1]) * 1e3 for i in range(len(pairs))])

    def _launch(self, a: int, b: int) -> None:
        self.fn((GRID,), (BLOCK,), (self.base, np.uint32(a // 4), np.uint32(b // 4), np.int32(ITERS)))


def compare(timer: PairTimer, off: int, reps: list[int], threshold: float) -> np.ndarray:
    """Times of `off` against every representative; a result other than exactly one match (a new slice,
    or noise: a launch slowed by something else only ever reads slower) is timed again, keeping the
    faster of the two."""
    if not reps:
        return np.zeros(0)
    t = timer.times_us([(off, r) for r in reps])
    if (t > threshold).sum() != 1:
        t = np.minimum(t, timer.times_us([(off, r) for r in reps]))
    return t


def map_units(timer: PairTimer, offsets: list[int], reps: list[int], threshold: float,
              deadline: float, times: list[np.ndarray]) -> list[dict]:
    """Slice of each byte offset: compared with every representative (new slices appended to `reps`, each
    offset's times against them appended to `times`)."""
    rows = []
    for off in offsets:
        if time.time() > deadline:
            break
        t = compare(timer, off, reps, threshold)
        same = np.flatnonzero(t > threshold)
        if len(same) == 0:
            reps.append(off)
            slice_id = len(reps) - 1
        else:
            slice_id = int(same[np.argmax(t[same])]) if len(same) > 1 else int(same[0])
        other = t[t <= threshold]
        times.append(t)
        rows.append({"offset": off, "slice": slice_id, "matches": len(same),
                     "same_us": float(t[same].min()) if len(same) else float("nan"),
                     "other_us_max": float(other.max()) if len(other) else float("nan"),
                     "other_us_median": float(np.median(other)) if len(other) else float("nan")})
    return rows


def main(argv: list[str] | None = None) -> int:
    """Maps four pages' units to slices; times the histogram's offsets."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--units", type=int, default=PAGE // UNIT, help="units of page 0 to map")
    ap.add_argument("--other-units", type=int, default=PAGE // UNIT, help="units of pages 1-3 to map")
    ap.add_argument("--seconds", type=float, default=460.0, help="stop mapping after this long")
    ap.add_argument("--matrix", type=int, default=512, help="first units timed pairwise")
    a = ap.parse_args(argv)
    import cupy as cp

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = gpu_meta()
    deadline = time.time() + a.seconds
    buf = cp.zeros(6 * PAGE // 4, cp.uint32)
    base = -(-buf.data.ptr // PAGE) * PAGE  # the first whole 2 MiB page of the buffer
    with tempfile.TemporaryDirectory() as tmp:
        timer = PairTimer(compile_cubin(SRC, Path(tmp)), base)
        warm = time.time() + 3.0
        while time.time() < warm:  # the SM clock up from idle
            timer.times_us([(0, 0)] * 200)
        if a.matrix:  # every pair of the first units: the contention levels, not only same/other
            m = np.stack([timer.times_us([(i * UNIT, j * UNIT) for j in range(a.matrix)])
                          for i in range(a.matrix)]).astype(np.float32)
            tmp = out / "pair_matrix.tmp.npy"
            np.save(tmp, m)
            tmp.replace(out / "pair_matrix.npy")
            print(f"pair matrix of {a.matrix} units: median {np.median(m):.2f} us", flush=True)
        # the threshold: between the same-word time and the time of words one unit apart (1 KiB of the
        # atomics probe went to 4 slices, so neighbouring units are on different slices)
        same = timer.times_us([(0, 0)] * 200 + [(k * UNIT, k * UNIT + 4) for k in range(1, 200)])
        pair = timer.times_us([(0, UNIT)] * 200)
        # 70 % of the way from two slices to one: two units of one slice read about 50 us, of two slices
        # 28, but some pairs of slices contend partly (37-39 us; pair_matrix.npy)
        threshold = float(np.median(pair) + 0.7 * (np.median(same) - np.median(pair)))
        write_csv([{"kind": "same_unit", "us": float(x)} for x in same] +
                  [{"kind": "units_0_1", "us": float(x)} for x in pair], out / "slice_pairs.csv", meta)
        print(f"same unit {np.median(same):.2f} us, units 0/1 {np.median(pair):.2f} us, "
              f"threshold {threshold:.2f} us", flush=True)
        reps: list[int] = []
        rows, times = [], []
        for page, units in ((0, a.units), (1, a.other_units), (2, a.other_units), (3, a.other_units)):
            offsets = [page * PAGE + u * UNIT for u in range(units)]
            got = map_units(timer, offsets, reps, threshold, deadline, times)
            rows += [{"page": page, "unit": (r["offset"] - page * PAGE) // UNIT, **r} for r in got]
            print(f"page {page}: {len(got)} units mapped, {len(reps)} slices so far, "
                  f"{sum(r['matches'] > 1 for r in got)} units matching two or more", flush=True)
            write_csv(rows, out / "slice_map.csv", meta)
            padded = np.full((len(times), 128), np.nan, np.float32)
            for i, t in enumerate(times):
                padded[i, :len(t)] = t[:128]
            np.save(out / "rep_times.tmp.npy", padded)
            (out / "rep_times.tmp.npy").replace(out / "rep_times.npy")
    hist = cp.RawModule(path=str(KERNELS / "atomics.ptx")).get_function("histogram_atomic")
    n, nbins = 1 << 20, 4096
    x = cp.random.randint(0, 1 << 30, n, dtype=cp.int32)
    grid = min(-(-n // 256), SMS * 4)
    hrows = []
    for k in range(64):
        off = k * 16 * 1024 + (k % 4) * UNIT  # 16 KiB steps, some not 1 KiB aligned
        bins = cp.ndarray((nbins,), cp.uint32, cp.cuda.MemoryPointer(buf.data.mem, base - buf.data.ptr + off))
        times = []
        for r in range(6):
            bins.fill(0)
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record()
            hist((grid,), (256,), (x, bins, np.int32(nbins), np.int32(n)))
            e.record()
            e.synchronize()
            if r:
                times.append(cp.cuda.get_elapsed_time(s, e))
        ok = int(bins.sum()) == n
        hrows.append({"offset": off, "ms": float(np.median(times)), "counts_ok": ok})
        print(f"histogram bins at +{off}: {np.median(times) * 1e3:.1f} us", flush=True)
    write_csv(hrows, out / "histogram_offsets.csv", meta)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
