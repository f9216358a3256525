"""Where the CUDA sources of the kernel set and their committed PTX live (see stcsim.resources), and the
mixin of a descriptor whose kernel is an entry of one committed PTX file."""

from pathlib import Path

from stcsim.resources import data_dir

PTX_DIR = data_dir("ptx_kernels")


class CommittedPtx:
    """Mixin of a kernel descriptor with a `ptx_file` field (a file of PTX_DIR) and a `procedural_name`:
    the kernel is the `.entry` of that name in that file."""

    @property
    def entry(self) -> str:
        """Name of the `.entry` in the PTX (the procedural name)."""
        return self.procedural_name  # type: ignore[attr-defined]

    @property
    def ptx_path(self) -> Path:
        """Path of the committed PTX that holds the entry."""
        return PTX_DIR / self.ptx_file  # type: ignore[attr-defined]
