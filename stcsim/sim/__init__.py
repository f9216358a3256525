"""Python API of the simulator engine: `Engine(config)`, device memory, PTX loading and kernel launches."""

from stcsim.sim.engine import (
    DEFAULT_MAX_CYCLES,
    DEFAULT_MAX_WARP_INSTS,
    Engine,
    LaunchError,
    PtxError,
    SimFault,
    WatchdogError,
)
from stcsim.sim.tensor_map import TensorMap

__all__ = [
    "DEFAULT_MAX_CYCLES",
    "DEFAULT_MAX_WARP_INSTS",
    "Engine",
    "LaunchError",
    "PtxError",
    "SimFault",
    "TensorMap",
    "WatchdogError",
]
