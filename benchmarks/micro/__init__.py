"""PTX microbenchmarks that pin the cycle-level timing model to its GPU configs.

Each ``*.ptx`` file in this directory is a Jinja2 template of one hand-written kernel (one behaviour).
`launch` renders and runs them on the engine; `contract` defines a case (`Bench`) and what it measures
(`Result`, `Check`); one module per group lists its cases with their contracts (`units`, `tensor`,
`memory`, `bandwidth`, `shared`, `occupancy`, `sparse`), and `registry` collects them (`BENCHES`,
`by_id`, `measure`). ``python -m benchmarks.micro.report`` writes the table in docs/microbenchmarks.md;
tests/timing asserts the same results. `silicon`, `hopper` and `hopper_sim` run the kernels on a real GPU
and compare. No case hard-codes a model number: the expectations come from the config, except the papers'
figures some cases are also checked against (tensor.PAPER_WMMA_V100, sparse.PAPER_001 and
sparse.PAPER_004_EXAMPLE).
"""

from benchmarks.micro.contract import Bench, Check, Result
from benchmarks.micro.launch import CONFIGS, render
from benchmarks.micro.registry import BENCHES, by_id, measure

__all__ = ["BENCHES", "CONFIGS", "Bench", "Check", "Result", "by_id", "measure", "render"]
