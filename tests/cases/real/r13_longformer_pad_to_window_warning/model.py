"""Pad the sequence up to a multiple of the attention window, warning once when it pads.

Imitates transformers/models/longformer/modeling_longformer.py: LongformerModel._pad_to_window_size
(the `padding_len > 0` branch with logger.warning_once and the F.pad calls) and the un-padding of
the output in LongformerModel.forward (`sequence_output[:, :-padding_len]`).
"""
import functools
import logging
from types import SimpleNamespace

import torch
from torch import nn

logger = logging.getLogger("r13_longformer")


@functools.lru_cache(None)
def warning_once(msg: str):
    logger.warning(msg)


class LongformerLite(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(attention_window=[4, 4], pad_token_id=1)
        self.embeddings = nn.Embedding(40, 16, padding_idx=1)
        self.encoder = nn.Sequential(nn.Linear(16, 16), nn.GELU(), nn.Linear(16, 16))

    def _pad_to_window_size(self, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
                            pad_token_id: int):
        attention_window = (
            self.config.attention_window
            if isinstance(self.config.attention_window, int)
            else max(self.config.attention_window)
        )
        assert attention_window % 2 == 0, f"`attention_window` should be an even value. Given {attention_window}"
        input_shape = input_ids.shape if input_ids is not None else inputs_embeds.shape
        batch_size, seq_len = input_shape[:2]

        padding_len = (attention_window - seq_len % attention_window) % attention_window

        if padding_len > 0:
            warning_once(
                f"Input ids are automatically padded to be a multiple of `config.attention_window`: {attention_window}"
            )
            if input_ids is not None:
                input_ids = nn.functional.pad(input_ids, (0, padding_len), value=pad_token_id)
            if position_ids is not None:
                position_ids = nn.functional.pad(position_ids, (0, padding_len), value=pad_token_id)
            attention_mask = nn.functional.pad(attention_mask, (0, padding_len), value=0)
            token_type_ids = nn.functional.pad(token_type_ids, (0, padding_len), value=0)
        return padding_len, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        padding_len, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds = self._pad_to_window_size(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
            position_ids=None, inputs_embeds=None, pad_token_id=self.config.pad_token_id,
        )
        hidden = self.encoder(self.embeddings(input_ids)) * attention_mask[..., None]
        sequence_output = hidden
        if padding_len > 0:
            sequence_output = sequence_output[:, :-padding_len]
        return sequence_output


def build():
    return LongformerLite().eval()


def inputs(batch: int):
    # sequence lengths 4, 5, 6, 7, 11, 20: multiples of the window (4, 20) and not
    return (torch.randint(2, 40, (2, batch + 3)),)
