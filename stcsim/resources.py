"""Where the data folders stcsim ships live: ``configs/`` (GPU configs) and ``ptx_kernels/`` (the kernel set).

Both are top-level folders of the source tree. A wheel (``pip install .``) ships them as package data in
``stcsim/data/`` (the install rule in CMakeLists.txt puts them there), found through ``importlib.resources``.
A source checkout (an editable install, or the tree on PYTHONPATH) has no ``stcsim/data/``: the checkout's own
folders are used, so an edited config or recompiled PTX takes effect without reinstalling. This module is the
one place that knows; every reader of these folders asks :func:`data_dir`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DATA_FOLDERS = ("configs", "ptx_kernels")
PACKAGE_DATA = "data"
"""The folder inside the installed ``stcsim`` package that holds the data folders of a wheel install."""


def data_dir(name: str) -> Path:
    """The folder `name` (one of DATA_FOLDERS): the wheel's package data, else the source checkout's folder.

    Raises ValueError for another name and FileNotFoundError (naming both places looked at) when neither
    exists, e.g. in an install built without the package data.
    """
    if name not in DATA_FOLDERS:
        raise ValueError(f"unknown data folder {name!r}; stcsim ships: {', '.join(DATA_FOLDERS)}")
    packaged = resources.files("stcsim") / PACKAGE_DATA / name
    if packaged.is_dir():
        return Path(str(packaged))
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / name).is_dir():
        return checkout / name
    raise FileNotFoundError(
        f"stcsim's {name}/ folder is missing: no package data at {packaged} and no source checkout at "
        f"{checkout}; reinstall stcsim (pip install .)"
    )
