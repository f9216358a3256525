"""Real-GPU runner: the simulator's engine API on a CUDA GPU through CuPy (optional dependency)."""

from stcsim.gpu.runner import GpuEngine, pack_args

__all__ = ["GpuEngine", "pack_args"]
