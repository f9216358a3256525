"""Real weights from a ``.npz`` file or a PyTorch ``state_dict`` file, matched to a network's layers.

A layer's tensor is ``<prefix><layer name>.weight`` in PyTorch layout (conv (Cout, Cin/groups, kh, kw), others
(M, K)); for torchvision CNNs, HuggingFace BERT and fairseq Transformers this is the model's own key. Tensors
the network does not use (BatchNorm statistics, biases) are ignored.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from stcsim.workloads.network import Network

TORCH_SUFFIXES = (".pt", ".pth", ".bin")


class WeightFileError(ValueError):
    """A weights file lacks tensors the network needs, or has them in the wrong shape."""

    def __init__(self, source: str, network: str, missing: list[str], misshaped: list[str]) -> None:
        """Record the problems and build a message naming every one of them."""
        self.missing, self.misshaped = missing, misshaped
        parts = []
        if missing:
            parts.append(f"missing {len(missing)} tensor(s): {', '.join(missing)}")
        if misshaped:
            parts.append(f"{len(misshaped)} mis-shaped tensor(s): {'; '.join(misshaped)}")
        super().__init__(f"{source} does not fit {network}: {'; '.join(parts)}")


def _read_torch(path: Path) -> dict[str, np.ndarray]:
    """All tensors of a PyTorch state_dict file as float32 numpy arrays; ImportError without torch."""
    try:
        import torch
    except ImportError as err:
        raise ImportError(
            f"reading {path.name} needs PyTorch, which is not installed; .npz files work without it "
            "(on a machine with torch: numpy.savez(path, **{k: v.numpy() for k, v in state_dict.items()}))"
        ) from err
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except OSError:
        raise
    except Exception as err:  # noqa: BLE001 - torch raises many kinds (pickle, zip, runtime) for a bad file
        raise ValueError(f"{path.name} is not a readable PyTorch state_dict file (torch.load with "
                         f"weights_only=True: {type(err).__name__})") from err
    if not isinstance(state, Mapping):
        raise ValueError(f"{path.name} holds a {type(state).__name__}; expected a state_dict name -> tensor")
    return {
        name: value.detach().cpu().float().numpy() for name, value in state.items() if torch.is_tensor(value)
    }


def match_weights(
    net: Network, tensors: Mapping[str, np.ndarray], prefix: str = "", source: str = "weights"
) -> dict[str, np.ndarray]:
    """Pick each weighted layer's tensor from ``tensors``; result is layer name -> float32 array.

    Raises WeightFileError naming every missing or mis-shaped tensor (with expected and found shapes).
    """
    missing: list[str] = []
    misshaped: list[str] = []
    weights: dict[str, np.ndarray] = {}
    for layer in net.weighted_layers:
        key = f"{prefix}{layer.name}.weight"
        if key not in tensors:
            missing.append(key)
            continue
        array = np.asarray(tensors[key])
        if array.shape != layer.weight_shape:
            misshaped.append(f"{key} expected {layer.weight_shape}, found {array.shape}")
            continue
        weights[layer.name] = array.astype(np.float32, copy=False)
    if missing or misshaped:
        raise WeightFileError(source, net.name, missing, misshaped)
    return weights


def load_weights(net: Network, path: str | Path, prefix: str = "") -> dict[str, np.ndarray]:
    """Load ``net``'s weights from ``path`` (.npz, or .pt/.pth/.bin with torch); see ``match_weights``.

    ``prefix`` is prepended to every key, e.g. ``"bert."`` for a BertForSequenceClassification checkpoint.
    From an .npz only the tensors the network needs are read.
    """
    path = Path(path)
    if path.suffix == ".npz":
        try:
            archive = np.load(path, allow_pickle=False)
        except (ValueError, zipfile.BadZipFile, EOFError) as err:
            raise ValueError(f"{path.name} is not a readable .npz file of arrays (numpy.load, no pickles: "
                             f"{type(err).__name__})") from err
        with archive:
            return match_weights(net, archive, prefix, source=str(path))
    if path.suffix in TORCH_SUFFIXES:
        return match_weights(net, _read_torch(path), prefix, source=str(path))
    raise ValueError(f"unsupported weights file {path.name!r}: use .npz or a PyTorch state_dict "
                     f"({', '.join(TORCH_SUFFIXES)})")
