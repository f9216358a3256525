"""stcsim.resources: the data folders from the wheel's package data, else from the source checkout."""

from pathlib import Path

import pytest

from stcsim import resources
from stcsim.config import CONFIG_DIR
from stcsim.kernels.paths import PTX_DIR


def test_every_reader_uses_the_one_helper():
    assert CONFIG_DIR == resources.data_dir("configs") and (CONFIG_DIR / "v100.yaml").is_file()
    assert PTX_DIR == resources.data_dir("ptx_kernels") and (PTX_DIR / "gemm_mma.ptx").is_file()


def test_only_the_shipped_folders_are_known():
    with pytest.raises(ValueError, match="stcsim ships: configs, ptx_kernels"):
        resources.data_dir("results")


def _fake_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, packaged: bool, checkout: bool) -> Path:
    """A package folder at tmp/src/stcsim, optionally with data/configs (a wheel) and a checkout around it."""
    package = tmp_path / "src" / "stcsim"
    package.mkdir(parents=True)
    if packaged:
        (package / "data" / "configs").mkdir(parents=True)
    if checkout:
        (tmp_path / "src" / "pyproject.toml").write_text("[project]\nname = 'stcsim'\n")
        (tmp_path / "src" / "configs").mkdir()
    monkeypatch.setattr(resources.resources, "files", lambda _: package)
    monkeypatch.setattr(resources, "__file__", str(package / "resources.py"))
    return package


def test_a_wheel_install_reads_its_package_data(tmp_path, monkeypatch):
    package = _fake_layout(tmp_path, monkeypatch, packaged=True, checkout=True)
    assert resources.data_dir("configs") == package / "data" / "configs"


def test_a_checkout_reads_its_own_folders(tmp_path, monkeypatch):
    _fake_layout(tmp_path, monkeypatch, packaged=False, checkout=True)
    assert resources.data_dir("configs") == tmp_path / "src" / "configs"


def test_neither_is_a_clear_error(tmp_path, monkeypatch):
    _fake_layout(tmp_path, monkeypatch, packaged=False, checkout=False)
    with pytest.raises(FileNotFoundError, match="configs/ folder is missing: no package data at .*reinstall"):
        resources.data_dir("configs")
