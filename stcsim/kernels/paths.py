"""Where the CUDA sources of the kernel set and their committed PTX live (see stcsim.resources)."""

from stcsim.resources import data_dir

PTX_DIR = data_dir("ptx_kernels")
