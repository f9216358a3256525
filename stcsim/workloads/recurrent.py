"""The LSTM models of paper 001: GNMT-style NMT and Show-and-Tell, unrolled per time step.

Each LSTM contributes two gate GEMMs per step (``.ih``: input weights 4H x in, ``.hh``: recurrent weights
4H x H) with N = batch and repeat = number of steps, the way a decoder (or GPGPU-Sim running the per-step
kernels) sees them. TensorFlow cells carry one gate bias, counted on ``.ih``.
"""

from __future__ import annotations

from stcsim.workloads.build import attention, linear, lstm
from stcsim.workloads.layer import Layer, LayerKind
from stcsim.workloads.network import Network

NMT_VOCAB = 32000  # WMT16 En-De BPE with 32k merges (tensorflow/nmt recipe), source and target each
IM2TXT_VOCAB = 12000
IM2TXT_EMBEDDING = 512
INCEPTION_V3_FEATURES = 2048


def gnmt(batch: int, seq_len: int, hidden: int) -> Network:
    """NMT of paper 001 in tensorflow/nmt's GNMT (v2) wiring with Luong (scaled dot-product) attention.

    Encoder: bidirectional LSTM (fw + bw, input = embedding) then one LSTM over their 2H concatenation.
    Decoder: 4 LSTMs; the bottom one takes [embedding; previous context], each upper one [output below;
    context of this step]; the attention query is the bottom decoder output. Embedding size = hidden.
    Source and target lengths are both ``seq_len``; the encoder memory projection runs once over all
    source positions, everything in the decoder once per target step.
    """
    h, steps = hidden, seq_len
    layers: list[Layer] = [
        *lstm("encoder.lstm0_fw", h, h, batch, steps),
        *lstm("encoder.lstm0_bw", h, h, batch, steps),
        *lstm("encoder.lstm1", h, 2 * h, batch, steps),
        linear("attention.memory_layer", h, h, batch * steps, LayerKind.ATTN_PROJ, bias=False),
        *lstm("decoder.lstm0", h, 2 * h, batch, steps),
        *attention("attention", batch, 1, h, q_len=1, kv_len=steps, repeat=steps),
    ]
    for index in range(1, 4):
        layers += lstm(f"decoder.lstm{index}", h, 2 * h, batch, steps)
    layers.append(linear("decoder.projection", NMT_VOCAB, h, batch, repeat=steps, bias=False))
    extras = (("encoder.embedding", (NMT_VOCAB, h)), ("decoder.embedding", (NMT_VOCAB, h)),
              ("attention.scale", ()))
    return Network("gnmt", tuple(layers), batch, seq_len=seq_len, hidden=hidden, extra_params=extras)


def show_and_tell(batch: int, seq_len: int, hidden: int) -> Network:
    """Show and Tell (im2txt): image embedding, one LSTM, word logits; the Inception-V3 encoder is excluded.

    The input is Inception-V3's 2048-d pooled feature. The LSTM runs ``seq_len + 1`` steps (the image
    embedding first, then one step per caption word); logits are computed for the ``seq_len`` word steps.
    """
    layers = (
        linear("image_embedding", IM2TXT_EMBEDDING, INCEPTION_V3_FEATURES, batch, bias=False),
        *lstm("lstm", hidden, IM2TXT_EMBEDDING, batch, seq_len + 1),
        linear("logits", IM2TXT_VOCAB, hidden, batch, repeat=seq_len),
    )
    extras = (("seq_embedding", (IM2TXT_VOCAB, IM2TXT_EMBEDDING)),)
    return Network("show_and_tell", layers, batch, seq_len=seq_len, hidden=hidden, extra_params=extras)
