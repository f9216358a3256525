"""Where the CUDA sources and their committed PTX live."""

from pathlib import Path

PTX_DIR = Path(__file__).resolve().parents[2] / "ptx_kernels"
