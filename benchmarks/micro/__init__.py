"""PTX microbenchmarks that pin the cycle-level timing model to its GPU configs.

Each ``*.ptx`` file in this directory is a Jinja2 template of one hand-written kernel (one behaviour);
`bench` renders them, runs them on the engine and compares what it measures with the value the config
(and the timing-model contract) predicts. ``python -m benchmarks.micro.report`` writes the table in
docs/microbenchmarks.md; tests/timing asserts the same results.
"""

from benchmarks.micro import sparse  # noqa: F401  (registers the sparse Tensor Core microbenchmarks)
from benchmarks.micro.bench import BENCHES, CONFIGS, Bench, Check, Result, by_id, measure, render

__all__ = ["BENCHES", "CONFIGS", "Bench", "Check", "Result", "by_id", "measure", "render"]
