"""Seeded random weights and the .npz / PyTorch weight loader, including its error paths."""

import sys
import types
from pathlib import Path

import numpy as np
import pytest

from stcsim.workloads import WeightFileError, get_network, load_weights, make_weights


def test_random_weights_have_layer_shapes_and_kaiming_scale() -> None:
    net = get_network("resnet50")
    weights = make_weights(net, seed=1)
    assert list(weights) == [layer.name for layer in net.layers] and len(weights) == 54
    w = weights["layer4.0.conv2"]
    assert w.shape == (512, 512, 3, 3) and w.dtype == np.float32
    assert w.std() == pytest.approx(np.sqrt(2 / (512 * 9)), rel=0.02)
    assert abs(w.mean()) < 1e-3


def test_random_weights_are_lazy_and_deterministic() -> None:
    net = get_network("vgg16")
    first, second = make_weights(net, seed=7), make_weights(net, seed=7)
    a, b = first["features.0"], second["features.0"]
    assert a is not first["features.0"]  # drawn on every lookup, never cached
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, make_weights(net, seed=8)["features.0"])
    assert first["features.0"].shape == (64, 3, 3, 3)


def test_layers_without_weights_get_none() -> None:
    net = get_network("bert_base", seq_len=16)
    weights = make_weights(net)
    assert "encoder.layer.0.attention.self.scores" not in weights
    assert len(weights) == 12 * 6 + 1
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        make_weights(net, seed=-1)


def _small_net():
    return get_network("show_and_tell", batch=1, seq_len=3, hidden=8)


def _state(net) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    state = {f"{layer.name}.weight": rng.standard_normal(layer.weight_shape) for layer in net.weighted_layers}
    state["logits.bias"] = np.zeros(12000)  # tensors the network does not use are ignored
    return state


def test_load_npz(tmp_path: Path) -> None:
    net = _small_net()
    state = _state(net)
    np.savez(tmp_path / "w.npz", **state)
    weights = load_weights(net, tmp_path / "w.npz")
    assert set(weights) == {"image_embedding", "lstm.ih", "lstm.hh", "logits"}
    assert weights["lstm.hh"].dtype == np.float32 and weights["lstm.hh"].shape == (32, 8)
    np.testing.assert_allclose(weights["logits"], state["logits.weight"], rtol=1e-6)


def test_load_npz_with_prefix(tmp_path: Path) -> None:
    net = _small_net()
    np.savez(tmp_path / "w.npz", **{f"model.{key}": value for key, value in _state(net).items()})
    weights = load_weights(net, str(tmp_path / "w.npz"), prefix="model.")
    assert set(weights) == {layer.name for layer in net.layers}


def test_missing_and_misshaped_tensors_are_named(tmp_path: Path) -> None:
    net = _small_net()
    state = _state(net)
    del state["lstm.ih.weight"]
    state["logits.weight"] = state["logits.weight"].T
    np.savez(tmp_path / "bad.npz", **state)
    with pytest.raises(WeightFileError) as info:
        load_weights(net, tmp_path / "bad.npz")
    message = str(info.value)
    assert "bad.npz does not fit show_and_tell" in message
    assert "missing 1 tensor(s): lstm.ih.weight" in message
    assert "logits.weight expected (12000, 8), found (8, 12000)" in message
    assert info.value.missing == ["lstm.ih.weight"] and isinstance(info.value, ValueError)


def test_unsupported_suffix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unsupported weights file 'w.h5': use \.npz or a PyTorch"):
        load_weights(_small_net(), tmp_path / "w.h5")


def test_pt_without_torch_says_npz_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError, installed or not
    (tmp_path / "w.pt").write_bytes(b"")
    with pytest.raises(ImportError, match=r"w.pt needs PyTorch.*\.npz files work without it"):
        load_weights(_small_net(), tmp_path / "w.pt")


class _FakeTensor:
    """Stands in for a torch.Tensor: detach().cpu().float().numpy()."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def detach(self) -> "_FakeTensor":
        return self

    cpu = detach

    def float(self) -> "_FakeTensor":
        return _FakeTensor(self.array.astype(np.float32))

    def numpy(self) -> np.ndarray:
        return self.array


def _fake_torch(payload: object) -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.load = lambda path, map_location, weights_only: payload
    torch.is_tensor = lambda value: isinstance(value, _FakeTensor)
    return torch


def test_pt_with_torch_reads_the_state_dict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    net = _small_net()
    state = {key: _FakeTensor(value) for key, value in _state(net).items()}
    state["step"] = 3  # non-tensor entries are skipped
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(state))
    weights = load_weights(net, tmp_path / "w.pth")
    assert weights["image_embedding"].shape == (512, 2048) and weights["image_embedding"].dtype == np.float32


def test_pt_that_is_not_a_state_dict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", _fake_torch([1, 2]))
    with pytest.raises(ValueError, match="w.pt holds a list; expected a state_dict"):
        load_weights(_small_net(), tmp_path / "w.pt")


def test_unreadable_pt_is_a_value_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.load raising on a corrupt file (a pickle error, a bad zip) is the one-line bad-input error."""
    torch = _fake_torch(None)

    def broken(path: object, map_location: str, weights_only: bool) -> object:
        raise RuntimeError("PytorchStreamReader failed reading zip archive: failed finding central directory")

    torch.load = broken
    monkeypatch.setitem(sys.modules, "torch", torch)
    with pytest.raises(ValueError, match=r"w.pt is not a readable PyTorch state_dict file .*RuntimeError"):
        load_weights(_small_net(), tmp_path / "w.pt")


def test_unreadable_npz_is_a_value_error(tmp_path: Path) -> None:
    (tmp_path / "w.npz").write_bytes(b"not a zip archive" * 8)
    with pytest.raises(ValueError, match=r"w.npz is not a readable .npz file"):
        load_weights(_small_net(), tmp_path / "w.npz")
