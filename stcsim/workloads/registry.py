"""The network registry: names, descriptions, which parameters each network takes, and their checks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from stcsim.workloads import classic, mobilenet, recurrent, resnet, transformers
from stcsim.workloads.network import Network


@dataclass(frozen=True)
class NetworkSpec:
    """How to build one network and which parameters it takes.

    Image networks set ``default_image_size``/``min_image_size`` (the smallest size for which every window
    fits); sequence networks set ``default_seq_len`` (and ``max_seq_len`` where positions are learned);
    ``default_hidden`` is set where the papers vary the LSTM size.
    """

    name: str
    description: str
    builder: Callable[..., Network]
    default_image_size: int | None = None
    min_image_size: int | None = None
    default_seq_len: int | None = None
    max_seq_len: int | None = None
    default_hidden: int | None = None

    @property
    def takes_image(self) -> bool:
        """True for image networks (they take ``image_size``)."""
        return self.default_image_size is not None


def _image(name: str, description: str, builder: Callable[..., Network], min_size: int) -> NetworkSpec:
    return NetworkSpec(name, description, builder, default_image_size=224, min_image_size=min_size)


_SPECS = (
    _image("alexnet", "AlexNet, torchvision variant (64-192-384-256-256 convs, 3 fc)", classic.alexnet, 63),
    _image("vgg16", "VGG-16 (config D), torchvision, no BatchNorm", classic.vgg16, 32),
    _image("vgg19", "VGG-19 (config E), torchvision, no BatchNorm", classic.vgg19, 32),
    _image("resnet18", "ResNet-18, torchvision", resnet.resnet18, 1),
    _image("resnet50", "ResNet-50 v1.5 (stride on the 3x3 conv), torchvision", resnet.resnet50, 1),
    _image("resnext50_32x4d", "ResNeXt-50 32x4d, torchvision (grouped 3x3 convs, 32 groups)",
           resnet.resnext50_32x4d, 1),
    _image("mobilenet_v1", "MobileNetV1 1.0 (depthwise-separable; depthwise convs are not GEMMs)",
           mobilenet.mobilenet_v1, 1),
    NetworkSpec("bert_base", "BERT-base encoder (12 x 768, 12 heads) + pooler; embeddings as lookups",
                transformers.bert_base, default_seq_len=128, max_seq_len=transformers.BERT_MAX_POSITIONS),
    NetworkSpec("transformer_base", "Transformer base (6+6 x 512, 8 heads), teacher-forced decoder",
                transformers.transformer_base, default_seq_len=128),
    NetworkSpec("gnmt", "NMT of paper 001: 2-layer LSTM encoder (1st bidir.), 4-layer decoder, attention",
                recurrent.gnmt, default_seq_len=50, default_hidden=512),
    NetworkSpec("show_and_tell", "Show and Tell (im2txt): LSTM over an Inception-V3 feature (CNN excluded)",
                recurrent.show_and_tell, default_seq_len=20, default_hidden=512),
)
_BY_NAME = {spec.name: spec for spec in _SPECS}
_ALIASES = {"resnext50": "resnext50_32x4d", "mobilenet": "mobilenet_v1", "bert": "bert_base",
            "transformer": "transformer_base", "nmt": "gnmt", "showtell": "show_and_tell"}


def _compact(name: str) -> str:
    return name.strip().lower().replace("-", "").replace("_", "")


_LOOKUP = {**{_compact(name): name for name in _BY_NAME}, **_ALIASES}


def list_networks() -> tuple[str, ...]:
    """Canonical names of all networks, in registry order."""
    return tuple(_BY_NAME)


def network_spec(name: str) -> NetworkSpec:
    """The spec of ``name`` (ignoring case, '-' and '_'; a few aliases); ValueError listing valid names."""
    key = _LOOKUP.get(_compact(name))
    if key is None:
        raise ValueError(f"unknown network {name!r}; choose one of: {', '.join(_BY_NAME)} "
                         f"(aliases: {', '.join(_ALIASES)})")
    return _BY_NAME[key]


def _check_int(label: str, value: object, minimum: int, maximum: int | None, network: str) -> int:
    bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (
        maximum is not None and value > maximum
    ):
        raise ValueError(f"{label} for {network} must be an integer {bound}, got {value!r}")
    return value


def _reject(spec: NetworkSpec, label: str, value: object, allowed: str) -> None:
    if value is not None:
        raise ValueError(f"{spec.name} takes no {label} (got {value!r}); it takes {allowed}")


def get_network(
    name: str, batch: int = 1, image_size: int | None = None, seq_len: int | None = None,
    hidden: int | None = None,
) -> Network:
    """Build network ``name`` as a GEMM layer table.

    ``image_size`` (square input) applies to image networks, ``seq_len`` to sequence networks and ``hidden``
    (LSTM cells) to gnmt and show_and_tell; left as None each takes the network's default. Raises ValueError
    naming what is allowed for an unknown name, a non-positive batch, an image too small for the network, or
    a parameter the network does not take.
    """
    spec = network_spec(name)
    kwargs = {"batch": _check_int("batch", batch, 1, None, spec.name)}
    allowed = "batch, image_size" if spec.takes_image else "batch, seq_len" + (
        ", hidden" if spec.default_hidden is not None else "")
    if spec.takes_image:
        _reject(spec, "seq_len", seq_len, allowed)
        size = spec.default_image_size if image_size is None else image_size
        kwargs["image_size"] = _check_int("image_size", size, spec.min_image_size, None, spec.name)
    else:
        _reject(spec, "image_size", image_size, allowed)
        length = spec.default_seq_len if seq_len is None else seq_len
        kwargs["seq_len"] = _check_int("seq_len", length, 1, spec.max_seq_len, spec.name)
    if spec.default_hidden is None:
        _reject(spec, "hidden", hidden, allowed)
    else:
        kwargs["hidden"] = _check_int("hidden", spec.default_hidden if hidden is None else hidden, 1, None,
                                      spec.name)
    return spec.builder(**kwargs)
