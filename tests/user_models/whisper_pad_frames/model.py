"""Keyword spotting on a tiny WhisperEncoder, which accepts exactly 2 * max_source_positions
mel frames: the wrapper pads or cuts the clip to that length, then pools over the frames the clip
really had."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _libs  # noqa: E402,F401  (library code from bench/_downloads)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from transformers import WhisperConfig  # noqa: E402
from transformers.models.whisper.modeling_whisper import WhisperEncoder  # noqa: E402


class Spotter(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = WhisperConfig(num_mel_bins=8, d_model=32, encoder_layers=2, encoder_attention_heads=2,
                            encoder_ffn_dim=64, max_source_positions=16, vocab_size=128,
                            pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
        self.encoder = WhisperEncoder(cfg)
        self.frames = 32
        self.head = nn.Linear(32, 2)

    def forward(self, mel):
        n = mel.shape[-1]
        if n < self.frames:
            mel = F.pad(mel, (0, self.frames - n))
        elif n > self.frames:
            mel = mel[..., : self.frames]
        h = self.encoder(mel).last_hidden_state
        keep = min(n, self.frames) // 2  # the encoder halves the frames
        return self.head(h[:, :keep].mean(1))


def build():
    torch.manual_seed(0)
    return Spotter().eval()


def inputs(batch, seq_len=32):
    g = torch.Generator().manual_seed(1009 * batch + seq_len)
    return {"mel": torch.randn(batch, 8, seq_len, generator=g)}
