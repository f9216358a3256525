"""The network registry: names, provenance, the parameters and named options (variants) each network takes.

A network is asked for by a spec string ``name[:key=value,...]``, e.g. ``alexnet:variant=tf-slim``,
``show_and_tell:layers=lstm``, ``transformer_base:seq_len=256`` or ``llama2_7b:phase=decode,kv_len=4096``.
Keys are the integer parameters ``image_size``, ``seq_len`` (also ``seq``), ``hidden`` and ``kv_len`` (the
LLMs), the network's own named options, and ``launch`` (every network: ``batched``, the default, runs each
attention layer's per-head GEMMs as one batched launch; ``serial`` as one launch per GEMM); an unknown key
or value is a ValueError that lists what is allowed. Which variant each paper ran is recorded in
:mod:`stcsim.workloads.papers`. ``onnx:FILE.onnx`` and ``torch:MODULE:CALLABLE:input=3x224x224`` import a
model instead (:mod:`stcsim.workloads.model_import`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass

from stcsim.workloads import classic, llm, mobilenet, nmt, recurrent, resnet, transformers
from stcsim.workloads.model_import import import_network, is_import_spec, with_import_params
from stcsim.workloads.network import Network

INT_PARAMS = ("image_size", "seq_len", "hidden", "kv_len")
KEY_ALIASES = {"seq": "seq_len"}
"""Other names of spec keys (``llama2_7b:seq=512`` is ``seq_len=512``)."""


@dataclass(frozen=True)
class OptionValue:
    """One value of a named option: what it selects and where that comes from.

    ``min_image_size`` overrides the network's minimum input size for this value (a variant with other
    windows).
    """

    value: str
    description: str
    min_image_size: int | None = None


@dataclass(frozen=True)
class NetworkOption:
    """A named option of a network (passed to its builder as a keyword); the first value is the default."""

    name: str
    values: tuple[OptionValue, ...]

    @property
    def default(self) -> OptionValue:
        """The value used when the option is not given."""
        return self.values[0]

    def lookup(self, network: str, text: str) -> OptionValue:
        """The value called ``text``; ValueError listing the allowed values otherwise."""
        for value in self.values:
            if value.value == text:
                return value
        allowed = ", ".join(v.value for v in self.values)
        raise ValueError(f"{network}: {self.name}={text!r} is not one of: {allowed}")


@dataclass(frozen=True)
class NetworkSpec:
    """How to build one network, where its layer table comes from and which parameters it takes.

    ``source`` names the code or configuration the layer table follows, ``reference`` the model's paper.
    Image networks set ``default_image_size``/``min_image_size`` (the smallest size for which every window
    fits); sequence networks set ``default_seq_len`` (and ``max_seq_len`` where positions are learned);
    ``default_hidden`` is set for the LSTM models. ``options`` are the named choices (variants).
    """

    name: str
    description: str
    builder: Callable[..., Network]
    source: str
    reference: str
    default_image_size: int | None = None
    min_image_size: int | None = None
    default_seq_len: int | None = None
    max_seq_len: int | None = None
    default_hidden: int | None = None
    options: tuple[NetworkOption, ...] = ()
    lengths: Callable[[dict[str, str]], tuple[int | None, int | None]] | None = None
    """LLMs: (seq_len, kv_len) defaults from the chosen options (the phase); None: the network takes no
    ``kv_len`` and its ``default_seq_len`` is fixed. ``max_seq_len`` then bounds both."""

    @property
    def takes_image(self) -> bool:
        """True for image networks (they take ``image_size``)."""
        return self.default_image_size is not None

    def option(self, name: str) -> NetworkOption | None:
        """The named option ``name`` (its own or ``launch``), or None if the network has no such option."""
        if name == LAUNCH.name:
            return LAUNCH
        return next((option for option in self.options if option.name == name), None)


def _image(name: str, description: str, builder: Callable[..., Network], min_size: int, source: str,
           reference: str, options: tuple[NetworkOption, ...] = ()) -> NetworkSpec:
    return NetworkSpec(name, description, builder, source, reference, default_image_size=224,
                       min_image_size=min_size, options=options)


def _lstm(name: str, description: str, builder: Callable[..., Network], hidden: int, source: str,
          reference: str, options: tuple[NetworkOption, ...] = (), seq_len: int = 50) -> NetworkSpec:
    return NetworkSpec(name, description, builder, source, reference, default_seq_len=seq_len,
                       default_hidden=hidden, options=options)


_TORCHVISION = "torchvision.models"
_ALEXNET_VARIANTS = NetworkOption("variant", (
    OptionValue("torchvision", "torchvision.models.alexnet: 64-192-384-256-256 convs, adaptive pool, 3 fc"),
    OptionValue("tf-slim", "tensorflow/models research/slim/nets/alexnet.py alexnet_v2: 64-192-384-384-256 "
                "convs, fc6 a 5x5 VALID conv, fc7/fc8 1x1 convs", min_image_size=195),
))
_SHOW_AND_TELL_LAYERS = NetworkOption("layers", (
    OptionValue("all", "image embedding, LSTM and word logits"),
    OptionValue("lstm", "the LSTM alone (paper 001: 'our interest is only in the LSTM layer')"),
))
_LUONG_ATTENTION = NetworkOption("attention", (
    OptionValue("global", "global attention over all source positions, general score"),
    OptionValue("local-p", "local-p attention: a window of 2D+1 = 21 positions, general score"),
))

LAUNCH = NetworkOption("launch", (
    OptionValue("batched", "each attention layer's per-head GEMMs as one strided-batched launch"),
    OptionValue("serial", "one launch per head (and batch element), one after another"),
))
"""Every network's option: how attention's activation x activation GEMMs are launched."""
_PHASE = NetworkOption("phase", (
    OptionValue(llm.PREFILL, f"the prompt: seq_len tokens per sequence (default {llm.DEFAULT_PREFILL_SEQ}) "
                "attending kv_len keys (default seq_len), logits of the last token"),
    OptionValue(llm.DECODE, "one generation step: seq_len new tokens per sequence (default 1) attending "
                f"kv_len cached keys (default {llm.DEFAULT_DECODE_KV})"),
))


def _llm(name: str, description: str) -> NetworkSpec:
    config = llm.CONFIGS[name]
    return NetworkSpec(name, description, functools.partial(llm.llm, name), config.source, config.reference,
                       default_seq_len=llm.DEFAULT_PREFILL_SEQ, max_seq_len=config.max_positions,
                       options=(_PHASE,), lengths=lambda chosen: llm.default_lengths(chosen["phase"]))


_SPECS = (
    _image("alexnet", "AlexNet", classic.alexnet, 63,
           f"{_TORCHVISION}.alexnet; TF-slim alexnet_v2 (variant=tf-slim)",
           "Krizhevsky 2014, 'One weird trick for parallelizing CNNs' (arXiv:1404.5997)",
           (_ALEXNET_VARIANTS,)),
    _image("vgg16", "VGG-16 (config D), no BatchNorm", classic.vgg16, 32, f"{_TORCHVISION}.vgg16",
           "Simonyan & Zisserman, ICLR 2015"),
    _image("vgg19", "VGG-19 (config E), no BatchNorm", classic.vgg19, 32, f"{_TORCHVISION}.vgg19",
           "Simonyan & Zisserman, ICLR 2015"),
    _image("resnet18", "ResNet-18", resnet.resnet18, 1, f"{_TORCHVISION}.resnet18", "He et al., CVPR 2016"),
    _image("resnet50", "ResNet-50 v1.5 (stride on the 3x3 conv)", resnet.resnet50, 1,
           f"{_TORCHVISION}.resnet50", "He et al., CVPR 2016"),
    _image("resnext50_32x4d", "ResNeXt-50 32x4d (grouped 3x3 convs, 32 groups)", resnet.resnext50_32x4d, 1,
           f"{_TORCHVISION}.resnext50_32x4d", "Xie et al., CVPR 2017"),
    _image("mobilenet_v1", "MobileNetV1 1.0 (depthwise convs are not GEMMs)", mobilenet.mobilenet_v1, 1,
           "keras.applications.MobileNet(alpha=1.0)", "Howard et al. 2017 (arXiv:1704.04861)"),
    NetworkSpec("bert_base", "BERT-base encoder (12 x 768, 12 heads) + pooler; embeddings as lookups",
                transformers.bert_base, "HuggingFace transformers BertModel, bert-base-uncased config",
                "Devlin et al., NAACL 2019", default_seq_len=128,
                max_seq_len=transformers.BERT_MAX_POSITIONS),
    NetworkSpec("transformer_base", "Transformer base (6+6 x 512, 8 heads), teacher-forced decoder",
                transformers.transformer_base, "fairseq transformer (base), WMT14 En-De 37k shared BPE",
                "Vaswani et al., NIPS 2017", default_seq_len=128),
    _lstm("nmt_wmt16", "NMT of paper 001: 2-layer LSTM encoder (1st bidir.), 4-layer decoder, attention",
          nmt.nmt_wmt16, 512, "paper 001 Sec. 5 (512 cells, WMT16 En-De) wired as tensorflow/nmt GNMT v2",
          "Zhu et al., MICRO 2019 (the model: Bahdanau et al. 2015, Luong et al. 2015)"),
    _lstm("gnmt", "GNMT: 8-layer LSTM encoder (1st bidir.), 8-layer decoder, 1024 cells, Bahdanau attention",
          nmt.gnmt, 1024, "Wu et al. 2016, wired as tensorflow/nmt standard_hparams/wmt16_gnmt_8_layer.json",
          "Wu et al. 2016, 'Google's NMT system' (arXiv:1609.08144)"),
    _lstm("nmt_iwslt", "tensorflow/nmt IWSLT'15 En-Vi: 1 bidir. + 2-layer decoder, 512 cells, scaled Luong",
          nmt.nmt_iwslt, 512, "tensorflow/nmt nmt/standard_hparams/iwslt15.json",
          "Luong, Brevdo & Zhao 2017, 'Neural machine translation (seq2seq) tutorial'"),
    _lstm("luong_nmt", "Luong NMT: 4+4 LSTM layers, 1000 cells, input feeding, general attention",
          nmt.luong_nmt, 1000, "Luong et al. 2015, Sec. 4.1 (4 layers, 1000 cells, 1000-d embeddings, 50K)",
          "Luong, Pham & Manning, EMNLP 2015", (_LUONG_ATTENTION,)),
    _lstm("show_and_tell", "Show and Tell (im2txt): LSTM over an Inception-V3 feature (CNN excluded)",
          recurrent.show_and_tell, 512, "tensorflow/models research/im2txt configuration.py",
          "Vinyals et al., CVPR 2015", (_SHOW_AND_TELL_LAYERS,), seq_len=20),
    _llm("llama2_7b", "Llama-2 7B: 32 x 4096, 32 heads, SwiGLU FFN 11008, vocab 32000"),
    _llm("llama2_13b", "Llama-2 13B: 40 x 5120, 40 heads, SwiGLU FFN 13824, vocab 32000"),
    _llm("llama2_70b", "Llama-2 70B: 80 x 8192, 64 heads (GQA, 8 KV heads), SwiGLU FFN 28672, vocab 32000"),
    _llm("llama3_8b", "Llama-3 8B: 32 x 4096, 32 heads (GQA, 8 KV heads), SwiGLU FFN 14336, vocab 128256"),
    _llm("llama3_70b", "Llama-3 70B: 80 x 8192, 64 heads (GQA, 8 KV heads), SwiGLU FFN 28672, vocab 128256"),
    _llm("opt_6.7b", "OPT-6.7B: 32 x 4096, 32 heads, ReLU FFN 16384, vocab 50272, tied LM head"),
)
_BY_NAME = {spec.name: spec for spec in _SPECS}
_ALIASES = {"resnext50": "resnext50_32x4d", "mobilenet": "mobilenet_v1", "bert": "bert_base",
            "transformer": "transformer_base", "showtell": "show_and_tell", "luong": "luong_nmt"}


def _compact(name: str) -> str:
    return name.strip().lower().replace("-", "").replace("_", "").replace(".", "")


_LOOKUP = {**{_compact(name): name for name in _BY_NAME}, **_ALIASES}


def list_networks() -> tuple[str, ...]:
    """Canonical names of all networks, in registry order."""
    return tuple(_BY_NAME)


def network_spec(name: str) -> NetworkSpec:
    """The spec of ``name`` (ignoring case, '-', '_' and any ``:options``; a few aliases); ValueError else."""
    key = _LOOKUP.get(_compact(name.partition(":")[0]))
    if key is None:
        raise ValueError(f"unknown network {name!r}; choose one of: {', '.join(_BY_NAME)} "
                         f"(aliases: {', '.join(_ALIASES)}), or import one: onnx:FILE.onnx, "
                         "torch:MODULE:CALLABLE:input=3x224x224")
    return _BY_NAME[key]


def parse_spec(text: str) -> tuple[NetworkSpec, dict[str, object]]:
    """Split ``name[:key=value,...]`` into the network's spec and its parameters (ints and option values)."""
    spec = network_spec(text)
    params: dict[str, object] = {}
    for item in filter(None, (p.strip() for p in text.partition(":")[2].split(","))):
        key, sep, value = (part.strip() for part in item.partition("="))
        key = KEY_ALIASES.get(key, key)
        option = spec.option(key)
        if not sep or (key not in INT_PARAMS and option is None):
            allowed = ", ".join([*_int_params(spec), *(o.name for o in spec.options), LAUNCH.name])
            raise ValueError(f"{spec.name}: bad parameter {item!r}; it takes: {allowed}")
        if key in params:
            raise ValueError(f"{spec.name}: {key} given twice in {text!r}")
        if option is not None:
            params[key] = option.lookup(spec.name, value).value
            continue
        try:
            params[key] = int(value)
        except ValueError:
            raise ValueError(f"{spec.name}: {key} must be an integer, got {value!r}") from None
    return spec, params


def with_params(text: str, **params: object) -> str:
    """The spec string ``text`` with the given keys added (``None`` values skipped), e.g.
    ``with_params("llama2_7b", phase="decode", kv_len=4096)`` is ``llama2_7b:phase=decode,kv_len=4096``; a
    key the spec already has with another value is a ValueError (parsing checks the rest)."""
    if is_import_spec(text):  # onnx:... / torch:... (stcsim.workloads.model_import)
        return with_import_params(text, **{KEY_ALIASES.get(key, key): value for key, value in params.items()})
    _, given = parse_spec(text)
    added = []
    for key, value in params.items():
        if value is None:
            continue
        key = KEY_ALIASES.get(key, key)
        if key in given:
            if str(given[key]) != str(value):
                raise ValueError(f"{key}={value} conflicts with {key}={given[key]} in {text!r}")
            continue
        added.append(f"{key}={value}")
    if not added:
        return text
    return text + ("," if ":" in text else ":") + ",".join(added)


def _int_params(spec: NetworkSpec) -> tuple[str, ...]:
    sizes = ("image_size",) if spec.takes_image else ("seq_len",)
    sizes += ("kv_len",) if spec.lengths is not None else ()
    return sizes + (("hidden",) if spec.default_hidden is not None else ())


def _check_int(label: str, value: object, minimum: int, maximum: int | None, network: str) -> int:
    bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (
        maximum is not None and value > maximum
    ):
        raise ValueError(f"{label} for {network} must be an integer {bound}, got {value!r}")
    return value


def _merge(spec: NetworkSpec, params: dict[str, object], **given: int | None) -> dict[str, object]:
    """Keyword parameters into the spec string's; the same key with two values is a ValueError."""
    merged = dict(params)
    for key, value in given.items():
        if value is None:
            continue
        if key in merged and merged[key] != value:
            raise ValueError(f"{spec.name}: {key}={value!r} conflicts with {key}={merged[key]!r} in the name")
        merged[key] = value
    return merged


def get_network(
    name: str, batch: int = 1, image_size: int | None = None, seq_len: int | None = None,
    hidden: int | None = None, kv_len: int | None = None,
) -> Network:
    """Build network ``name`` (a spec string, see the module docstring) as a GEMM layer table.

    ``image_size`` (square input) applies to image networks, ``seq_len`` to sequence networks and ``hidden``
    (LSTM cells) to the LSTM models, ``kv_len`` (keys attended) to the LLMs, given here or in the spec
    string; left out each takes the network's (phase's) default. Raises ValueError naming what is allowed for
    an unknown name, option or value, a non-positive
    batch, an image too small for the network (variant), or a parameter the network does not take.
    """
    if is_import_spec(name):  # onnx:FILE / torch:MODULE:CALLABLE (stcsim.workloads.model_import)
        return import_network(name, batch, image_size=image_size, seq_len=seq_len, hidden=hidden,
                              kv_len=kv_len)
    spec, params = parse_spec(name)
    params = _merge(spec, params, image_size=image_size, seq_len=seq_len, hidden=hidden, kv_len=kv_len)
    label = spec.name
    kwargs: dict[str, object] = {"batch": _check_int("batch", batch, 1, None, label)}
    launch = LAUNCH.lookup(label, str(params.pop(LAUNCH.name, LAUNCH.default.value)))
    chosen = {o.name: o.lookup(label, str(params.pop(o.name, o.default.value))) for o in spec.options}
    for key in INT_PARAMS:
        if key in params and key not in _int_params(spec):
            raise ValueError(f"{label} takes no {key} (got {params[key]!r}); it takes batch, "
                             f"{', '.join(_int_params(spec))}")
    if spec.takes_image:
        minimum = next((v.min_image_size for v in chosen.values() if v.min_image_size), spec.min_image_size)
        size = params.get("image_size", spec.default_image_size)
        kwargs["image_size"] = _check_int("image_size", size, minimum, None, _label(spec, chosen))
    elif spec.lengths is not None:
        seq_default, kv_default = spec.lengths({key: value.value for key, value in chosen.items()})
        seq = _check_int("seq_len", params.get("seq_len", seq_default), 1, spec.max_seq_len, label)
        kwargs["seq_len"] = seq
        kwargs["kv_len"] = _check_int("kv_len", params.get("kv_len", kv_default or seq), seq,
                                      spec.max_seq_len, label)
    else:
        kwargs["seq_len"] = _check_int("seq_len", params.get("seq_len", spec.default_seq_len), 1,
                                       spec.max_seq_len, label)
    if spec.default_hidden is not None:
        kwargs["hidden"] = _check_int("hidden", params.get("hidden", spec.default_hidden), 1, None, label)
    kwargs.update({key: value.value for key, value in chosen.items()})
    net = spec.builder(**kwargs)
    options = tuple((key, value.value) for key, value in chosen.items())
    if launch != LAUNCH.default:  # one launch per GEMM: the batched layers unbatched
        layers = tuple(dataclasses.replace(layer, batched=False) for layer in net.layers)
        return dataclasses.replace(net, layers=layers, options=(*options, (LAUNCH.name, launch.value)))
    return dataclasses.replace(net, options=options)


def _label(spec: NetworkSpec, chosen: dict[str, OptionValue]) -> str:
    """``name`` or ``name:option=value,...`` (options other than the default) for error messages."""
    options = ",".join(f"{key}={value.value}" for key, value in chosen.items()
                       if value != spec.option(key).default)
    return f"{spec.name}:{options}" if options else spec.name
