"""Values derived from declared config keys: declared and computed here, and nowhere else.

Each :class:`Derived` has a dotted name (it appears in ``GpuConfig.flat()`` beside the declared keys but can
not be set in YAML), a unit, a doc line that states the formula, and the function computing it. Entries are
evaluated in order, so a formula may use an entry above it. A function returns ``None`` where the value
does not exist on that GPU (e.g. ldmatrix before sm_75).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from stcsim.config.extensions import extension_derived
from stcsim.config.params import Derived, Value
from stcsim.config.schema import PARAMS

Values = Mapping[str, Value]

LDMATRIX_MIN_SM = 75
"""PTX ISA: ldmatrix needs sm_75 or later."""

WMMA_F32 = "tensor.wmma_m16n16k16_f32"


def _i(v: Values, key: str) -> int:
    return int(v[key])


def _product(*keys: str) -> Callable[[Values], int]:
    def fn(v: Values) -> int:
        result = 1
        for key in keys:
            result *= _i(v, key)
        return result

    return fn


def _quotient(top: str, *bottom: str) -> Callable[[Values], int]:
    below = _product(*bottom)
    return lambda v: _i(v, top) // below(v)


def _wmma_latency(op: str) -> Derived:
    def fn(v: Values) -> int:
        return _i(v, f"{op}.sets") * (_i(v, f"{op}.fetch_cycles") + _i(v, f"{op}.compute_cycles"))

    return Derived("cycles", "sets x (fetch_cycles + compute_cycles) (paper 001: 4 x (2 + 8) = 40 on V100)",
                   fn)


def _ldmatrix_latency(n: int) -> Derived:
    def fn(v: Values) -> int | None:
        if _i(v, "gpu.sm_version") < LDMATRIX_MIN_SM:
            return None
        return (_i(v, "smem.latency") + (n - 1) * _i(v, "smem.wavefront_latency")
                + _i(v, "smem.matrix_extra_latency"))

    return Derived("cycles", f"ldmatrix .x{n} ({n} 8x8 b16 matrices, one wavefront each): smem.latency + "
                   f"{n - 1} x smem.wavefront_latency + smem.matrix_extra_latency; sm_75+ (what the "
                   "shared-memory model gives it)", fn, "reports")


def _ldmatrix_interval(n: int) -> Derived:
    def fn(v: Values) -> int | None:
        if _i(v, "gpu.sm_version") < LDMATRIX_MIN_SM:
            return None
        return n * _i(v, "smem.cycles_per_wavefront")

    return Derived("cycles", f"Shared-memory pipe occupancy of ldmatrix .x{n}: {n} x "
                   "smem.cycles_per_wavefront; sm_75+ (what the shared-memory model gives it)", fn, "reports")


def _l2_access(v: Values) -> int:
    return _i(v, "l2.hit_latency") - _i(v, "l1d.hit_latency") - 2 * _i(v, "icnt.latency")


def _l1_max(v: Values) -> int:
    carveouts = str(v["sm.shared_carveouts_kb"])
    if not carveouts:
        return _i(v, "l1d.size_bytes")
    return _i(v, "sm.unified_l1_shared_bytes") - int(carveouts.split(",")[0]) * 1024


def _dram_bytes_per_cycle(v: Values) -> float:
    return float(v["dram.sustained_bandwidth_gbps"]) * 1000 / float(v["gpu.core_clock_mhz"])


# The core instructions a GPU has, as explicit keys (features.<name>: true / false) that the engine reads
# instead of testing whether a timing key is present: each is on from the sm_version its timing keys need
# (their schema min_sm: one source for the fact). The extensions' are their <name>.enabled keys.
FEATURE_KEYS = {
    "wmma": ("wmma.mma m16n16k16", f"{WMMA_F32}.issue_interval"),
    "mma_m16n8k8": ("mma.sync m16n8k8", "tensor.mma_m16n8k8_f32.latency"),
    "mma_m16n8k16": ("mma.sync m16n8k16", "tensor.mma_m16n8k16_f32.latency"),
    "mma_sp": ("mma.sp.sync m16n8k32", "tensor.mma_sp_m16n8k32_f32.latency"),
    "cp_async": ("cp.async", "cp_async.mode"),
}


def _feature(what: str, key: str) -> Derived:
    need = PARAMS[key].min_sm or int(PARAMS["gpu.sm_version"].lo or 0)  # ungated: every GPU the schema takes
    group = key.rsplit(".", 1)[0]
    return Derived("bool", f"The GPU runs {what}: gpu.sm_version >= {need} (the sm_version {group}.* needs)",
                   lambda v: _i(v, "gpu.sm_version") >= need)


DERIVED: dict[str, Derived] = {
    **{f"features.{name}": _feature(what, key) for name, (what, key) in FEATURE_KEYS.items()},
    "gpu.num_sms": Derived("count", "gpu.n_clusters x gpu.n_cores_per_cluster",
                           _product("gpu.n_clusters", "gpu.n_cores_per_cluster")),
    "sm.max_warps": Derived("count", "sm.max_threads / 32", lambda v: _i(v, "sm.max_threads") // 32),
    "tensor.pipes_per_subcore": Derived(
        "count", "Warp-level MMA pipes per sub-core: tensor.cores_per_subcore / tensor.cores_per_warp_op",
        _quotient("tensor.cores_per_subcore", "tensor.cores_per_warp_op")),
    f"{WMMA_F32}.latency": _wmma_latency(WMMA_F32),
    "tensor.wmma_m16n16k16_f16.latency": _wmma_latency("tensor.wmma_m16n16k16_f16"),
    **{f"smem.ldmatrix_x{n}.latency": _ldmatrix_latency(n) for n in (1, 2, 4)},
    **{f"smem.ldmatrix_x{n}.issue_interval": _ldmatrix_interval(n) for n in (1, 2, 4)},
    "l1d.sets": Derived("count", "l1d.size_bytes / (l1d.assoc x l1d.line_bytes)",
                        _quotient("l1d.size_bytes", "l1d.assoc", "l1d.line_bytes")),
    "l1d.max_bytes": Derived("bytes", "The largest L1D a launch gets: sm.unified_l1_shared_bytes less the "
                             "smallest of sm.shared_carveouts_kb (l1d.size_bytes where none is listed)",
                             _l1_max, "reports"),
    "l2.slice_bytes": Derived("bytes", "l2.size_bytes / l2.slices", _quotient("l2.size_bytes", "l2.slices"),
                              "derived"),
    "l2.sets_per_slice": Derived("count", "l2.slice_bytes / (l2.assoc x l2.line_bytes)",
                                 _quotient("l2.slice_bytes", "l2.assoc", "l2.line_bytes")),
    "l2.slices_per_channel": Derived("count", "l2.slices / dram.channels",
                                     _quotient("l2.slices", "dram.channels"), "reports"),
    "l2.access_cycles": Derived("cycles", "Cycles in the L2 slice on a hit: l2.hit_latency - l1d.hit_latency "
                                "- 2 x icnt.latency", _l2_access),
    "dram.access_cycles": Derived("cycles", "Extra cycles of an L2 miss: dram.latency - l2.hit_latency",
                                  lambda v: _i(v, "dram.latency") - _i(v, "l2.hit_latency")),
    "dram.bytes_per_cycle": Derived("B/cycle", "Whole-GPU DRAM bytes per core cycle: "
                                    "dram.sustained_bandwidth_gbps x 1000 / gpu.core_clock_mhz",
                                    _dram_bytes_per_cycle, "derived"),
    "dram.bytes_per_cycle_per_channel": Derived(
        "B/cycle", "dram.bytes_per_cycle / dram.channels",
        lambda v: float(v["dram.bytes_per_cycle"]) / _i(v, "dram.channels")),
    **extension_derived(),
}
"""Every derived value, in evaluation order."""


def derive(values: Values) -> dict[str, Value]:
    """Return ``values`` extended with every derived value that exists on this GPU."""
    out = dict(values)
    for key, item in DERIVED.items():
        result = item.fn(out)
        if result is not None:
            out[key] = result
    return out
