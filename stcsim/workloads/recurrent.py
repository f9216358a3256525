"""Show and Tell (paper 001's image-captioning LSTM), unrolled per time step.

Each LSTM contributes two gate GEMMs per step (``.ih``: input weights 4H x in, ``.hh``: recurrent weights
4H x H) with N = batch and repeat = number of steps, the way a decoder (or GPGPU-Sim running the per-step
kernels) sees them. TensorFlow cells carry one gate bias, counted on ``.ih``. The translation models are in
:mod:`stcsim.workloads.nmt`.
"""

from __future__ import annotations

from stcsim.workloads.build import linear, lstm
from stcsim.workloads.layer import Layer
from stcsim.workloads.network import Network

IM2TXT_VOCAB = 12000
IM2TXT_EMBEDDING = 512
INCEPTION_V3_FEATURES = 2048
SHOW_AND_TELL_LAYERS = ("all", "lstm")


def show_and_tell(batch: int, seq_len: int, hidden: int, layers: str = "all") -> Network:
    """Show and Tell (im2txt): image embedding, one LSTM, word logits; the Inception-V3 encoder is excluded.

    The input is Inception-V3's 2048-d pooled feature. The LSTM runs ``seq_len + 1`` steps (the image
    embedding first, then one step per caption word); logits are computed for the ``seq_len`` word steps.
    ``layers="lstm"`` keeps the LSTM alone (paper 001: "our interest is only in the LSTM layer"): no image
    embedding, no logits, no word embedding table.
    """
    cell = lstm("lstm", hidden, IM2TXT_EMBEDDING, batch, seq_len + 1)
    if layers == "lstm":
        return Network("show_and_tell", cell, batch, seq_len=seq_len, hidden=hidden)
    gemms: tuple[Layer, ...] = (
        linear("image_embedding", IM2TXT_EMBEDDING, INCEPTION_V3_FEATURES, batch, bias=False),
        *cell,
        linear("logits", IM2TXT_VOCAB, hidden, batch, repeat=seq_len),
    )
    extras = (("seq_embedding", (IM2TXT_VOCAB, IM2TXT_EMBEDDING)),)
    return Network("show_and_tell", gemms, batch, seq_len=seq_len, hidden=hidden, extra_params=extras)
