"""Config of the SHMMA extension (paper 001, engine/ext/stc): the sparse Tensor Core's set pipeline, from
which the per-K timings are derived, and the ping-pong B buffer."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from stcsim.config.params import Bool, Derived, Group, Int, Value

NAME = "stc"
WMMA_F32 = "tensor.wmma_m16n16k16_f32"
_P001 = "paper 001 (Zhu et al., MICRO'19)"

Values = Mapping[str, Value]


def _i(v: Values, key: str) -> int:
    return int(v[key])


GROUP = Group("Sparse Tensor Core SHMMA extension (paper 001): 16x16x16 warp ops with compressed A "
             "(L = 16, K = 2, 4 or 8 non-zeros per row, spelled .kK in the instruction); the per-K "
             "timings are derived from this set pipeline (see derived values stc.smma_k*)", {
    "enabled": Bool("Accept the wmma.*.smma instructions (their timing; functional runs need no config)",
                    f"{_P001} Sec. 4.2", False),
    "pingpong": Bool("Ping-pong operand buffer B: a set's B fetch overlaps the previous set's compute",
                     f"{_P001} Sec. 4.3, Fig. 13(c)", False),
    "sets": Int("Sets per sparse warp op (one row of A per worktuple and set)", "count",
                f"{_P001} Sec. 4.2 (four sets complete one sparse WMMA)", 4, hi=64, used_by="derived"),
    "offset_fetch_cycles": Int("SHMMA.FETCHIDX: load a row's offsets into the offset register", "cycles",
                               f"{_P001} Sec. 4.3 (1 cycle)", 1, lo=0, hi=1024, used_by="derived"),
    "offset_decode_cycles": Int("Decode the offset register, set up operand buffer B's datapath",
                                "cycles",
                                f"{_P001} Sec. 4.3 (1 cycle)", 1, lo=0, hi=1024, used_by="derived"),
    "operand_bus_bytes_per_cycle": Int("Register-file to operand-buffer bandwidth: a set fetches K rows "
                                       "x 16 FP16 columns of B", "B/cycle",
                                       f"{_P001} footnote 3 (2 cycles per 4x8 FP16 = 32 B/cycle)", 32,
                                       hi=4096, used_by="derived"),
    "dot_product_cycles": Int("Compute cycles of a set per 4 non-zeros of the row (16 4-dim dot "
                              "products on the octet's DP units)", "cycles",
                              f"{_P001} Sec. 4.3 (computation reduced to 2 cycles for K = 4)", 2,
                              hi=1024, used_by="derived"),
})


STC_K = (2, 4, 8)
"""Non-zeros per 16-wide row of A that the SHMMA instructions take (.k2, .k4, .k8)."""


def _stc_dense_pingpong(v: Values) -> int:
    sets, compute, fetch = (_i(v, f"{WMMA_F32}.{k}") for k in ("sets", "compute_cycles", "fetch_cycles"))
    return fetch + compute + (sets - 1) * max(fetch, compute)


def _stc_sparse(k: int) -> Callable[[Values], int]:
    """Paper 001's set pipeline for K non-zeros per row (see the Derived doc below)."""
    def fn(v: Values) -> int:
        sets = _i(v, "stc.sets")
        prep = _i(v, "stc.offset_fetch_cycles") + _i(v, "stc.offset_decode_cycles")
        fetch = -(-k * 16 * 2 // _i(v, "stc.operand_bus_bytes_per_cycle"))
        compute = -(-k // 4) * _i(v, "stc.dot_product_cycles")
        if v["stc.pingpong"]:
            return prep + fetch + compute + (sets - 1) * max(fetch, compute, prep)
        return prep + fetch + compute + (sets - 1) * (max(prep, compute) + fetch)

    return fn


_STC_PIPELINE = (
    "prep = offset_fetch + offset_decode; fetch = ceil(K x 16 x 2 B / operand_bus_bytes_per_cycle); "
    "compute = ceil(K / 4) x dot_product_cycles; without ping-pong the next set's offsets are fetched during "
    "compute but its B fetch waits for the single buffer: prep + fetch + compute + (sets - 1) x "
    "(max(prep, compute) + fetch); with stc.pingpong all stages overlap: prep + fetch + compute + "
    "(sets - 1) x max(fetch, compute, prep). Paper 001 Fig. 13 (K = 4): 26 and 20")


DERIVED: dict[str, Derived] = {
    "stc.dense_cycles": Derived("cycles", "Dense 16x16x16 op on the sparse Tensor Core without ping-pong: "
                            f"{WMMA_F32}.latency (paper 001: 40)", lambda v: v[f"{WMMA_F32}.latency"],
                            "reports"),
"stc.dense_pingpong.latency": Derived(
    "cycles", "Dense wmma.mma (f32) with the ping-pong B buffer (replaces the base timing where "
    "stc.pingpong): a two-stage pipeline fetch + compute + (sets - 1) x max(fetch, compute) of "
    f"{WMMA_F32} (paper 001: 2 + 8 + 3 x 8 = 34)", _stc_dense_pingpong),
"stc.dense_pingpong.issue_interval": Derived(
    "cycles", "The Tensor Cores are busy for the whole dense op: stc.dense_pingpong.latency",
    lambda v: v["stc.dense_pingpong.latency"]),
**{f"stc.smma_k{k}.latency": Derived("cycles", f"wmma.mma ... .smma.k{k} latency: {_STC_PIPELINE}",
                                     _stc_sparse(k)) for k in STC_K},
**{f"stc.smma_k{k}.issue_interval": Derived(
    "cycles", f"The Tensor Cores are busy for the whole sparse op: stc.smma_k{k}.latency (as the dense "
    "wmma's issue_interval)", lambda v, k=k: v[f"stc.smma_k{k}.latency"]) for k in STC_K},
}
