"""Which network, in which variant, each of the five papers ran: the data the paper-figure runs use.

Each entry names the network as the paper does, the registry spec string of the variant it ran, the batch
the paper states (None where it states none; the caller then picks one) and the evidence: the paper's own
words, or what is assumed where it is silent. ``python -m stcsim.workloads --list`` shows the mapping.
"""

from __future__ import annotations

from dataclasses import dataclass

from stcsim.workloads.registry import network_spec

PAPERS = {
    "000": "Huang et al., Shfl-BW (DAC 2022)",
    "001": "Zhu et al., Sparse Tensor Core (MICRO 2019)",
    "002": "Guo et al., Accelerating sparse DNNs based on tiled GEMM (tile-wise)",
    "003": "SparseRT: accelerating unstructured sparsity on GPUs",
    "004": "Zhu & Xie, Taming unstructured sparsity on GPUs (ExTensor)",
}


@dataclass(frozen=True)
class PaperWorkload:
    """One network of one paper: its name there, the spec string of the variant, batch and evidence."""

    paper: str
    label: str
    spec: str
    batch: int | None
    evidence: str


_001_REPO = "'We used the networks in TensorFlow model repository [26] as the reference.'"
PAPER_WORKLOADS = (
    PaperWorkload("000", "Transformer", "transformer_base", None,
                  "'Transformer [1] and GNMT [5] on the WMT translation task'; BLEU ~27 is the base model"),
    PaperWorkload("000", "GNMT", "gnmt", None, "ref. [5]: Wu et al. 2016, Google's NMT system"),
    PaperWorkload("000", "ResNet50", "resnet50", None, "'ResNet50 [4] for ImageNet classification'"),
    PaperWorkload("001", "AlexNet", "alexnet:variant=tf-slim", None, _001_REPO),
    PaperWorkload("001", "VGG-16", "vgg16", None,
                  f"{_001_REPO} TF-slim vgg_16 has torchvision's GEMMs and parameter count "
                  "(fc6 = 7x7 VALID conv)"),
    PaperWorkload("001", "ResNet-50", "resnet50", None,
                  f"{_001_REPO} Not pinned: slim resnet_v1_50 strides in the last unit of a block, "
                  "official/resnet (and torchvision, used here) in the first"),
    PaperWorkload("001", "ResNeXt-50", "resnext50_32x4d", None,
                  "'ResNeXt-50 [79] with 32x4d configuration' (no TF repository model: torchvision)"),
    PaperWorkload("001", "Show and Tell", "show_and_tell:layers=lstm", None,
                  "'The LSTM layer has 512 cells by default. Since our interest is only in the LSTM layer'"),
    PaperWorkload("001", "NMT", "nmt_wmt16", None,
                  "'a 2-layer LSTM encoder, a 4-layer LSTM decoder ... first layer ... bidirectional ... "
                  "512 LSTM cells', WMT 16 English-German"),
    PaperWorkload("002", "VGG16", "vgg16", None, "'VGG16, ResNet-18, and ResNet-50 (CNN)' on ImageNet"),
    PaperWorkload("002", "ResNet-18", "resnet18", None, "'VGG16, ResNet-18, and ResNet-50 (CNN)'"),
    PaperWorkload("002", "ResNet-50", "resnet50", None, "'VGG16, ResNet-18, and ResNet-50 (CNN)'"),
    PaperWorkload("002", "NMT", "nmt_iwslt", None,
                  "'We reproduce the model with an open-source framework [36]' (tensorflow/nmt) on "
                  "'the IWSLT English-Vietnamese dataset'"),
    PaperWorkload("002", "BERT", "bert_base", None,
                  "'BERT-base with 12 layers' on MNLI and SQuAD; sequence length not stated (default 128)"),
    PaperWorkload("003", "ResNet-50", "resnet50", 1,
                  "'We assume a batch size of 1'; 1x1 convs as matrix multiplications (problems 1-8)"),
    PaperWorkload("003", "MobileNet V1", "mobilenet_v1", 1, "'We assume a batch size of 1' (problems 12-20)"),
    PaperWorkload("003", "Transformer", "transformer_base:seq_len=256", 1,
                  "NLP problems 9-11 have N = 256 at batch 1: 256 tokens"),
    PaperWorkload("004", "VGG-19", "vgg19", None, "'VGG-19 [2], ResNet-50 [3], and NMT [30]'"),
    PaperWorkload("004", "ResNet-50", "resnet50", None, "'VGG-19 [2], ResNet-50 [3], and NMT [30]'"),
    PaperWorkload("004", "NMT", "luong_nmt", None,
                  "ref. [30]: Luong, Pham & Manning, 'Effective approaches to attention-based neural "
                  "machine translation', EMNLP 2015"),
)


def paper_workloads(paper: str) -> tuple[PaperWorkload, ...]:
    """The networks paper ``paper`` ("000" .. "004") ran; ValueError naming the papers otherwise."""
    if paper not in PAPERS:
        raise ValueError(f"unknown paper {paper!r}; choose one of: {', '.join(PAPERS)}")
    return tuple(w for w in PAPER_WORKLOADS if w.paper == paper)


def papers_using(network: str) -> tuple[PaperWorkload, ...]:
    """The paper entries that run network ``network`` (any variant)."""
    name = network_spec(network).name
    return tuple(w for w in PAPER_WORKLOADS if network_spec(w.spec).name == name)
