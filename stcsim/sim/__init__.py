"""Python API of the simulator engine: `Engine(config)`, device memory, PTX loading and kernel launches."""

from stcsim.sim.engine import Engine, LaunchError, PtxError, SimFault

__all__ = ["Engine", "LaunchError", "PtxError", "SimFault"]
