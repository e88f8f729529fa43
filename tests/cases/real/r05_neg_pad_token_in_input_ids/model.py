"""A one-time warning when input_ids look padded and no attention mask was given.

Imitates transformers/modeling_utils.py: PreTrainedModel.warn_if_padding_and_no_attention_mask
(with its `is_tracing` early return, transformers/utils/import_utils.py: is_tracing) as called at the
top of BertModel.forward, and transformers/utils/logging.py: warning_once.
"""
import functools
import logging
from types import SimpleNamespace

import torch
from torch import nn

logger = logging.getLogger("r05_pad_token")


@functools.lru_cache(None)
def warning_once(*args):
    logger.warning(*args)


def is_tracing(tensor=None) -> bool:
    _is_tracing = torch.compiler.is_compiling() or torch.jit.is_tracing()
    if tensor is not None:
        _is_tracing |= isinstance(tensor, torch.fx.Proxy)
    return _is_tracing


class TinyBert(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(pad_token_id=0, bos_token_id=1, eos_token_id=2, sep_token_id=3)
        self.word_embeddings = nn.Embedding(30, 16)
        self.encoder = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0)

    def warn_if_padding_and_no_attention_mask(self, input_ids, attention_mask):
        if is_tracing(input_ids):
            return
        if (attention_mask is not None) or (self.config.pad_token_id is None):
            return
        if self.config.pad_token_id in input_ids[:, [-1, 0]]:
            warn_string = "We strongly recommend passing in an `attention_mask` since your input_ids may be padded."
            sep_token_id = getattr(self.config, "sep_token_id", None)
            if (
                (self.config.bos_token_id is not None and self.config.bos_token_id == self.config.pad_token_id)
                or (sep_token_id is not None and sep_token_id == self.config.pad_token_id)
            ):
                warn_string += f"\nYou may ignore this warning if your `pad_token_id` ({self.config.pad_token_id}) is identical to the `bos_token_id`."
            warning_once(warn_string)

    def forward(self, input_ids, attention_mask=None):
        self.warn_if_padding_and_no_attention_mask(input_ids, attention_mask)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        embeddings = self.word_embeddings(input_ids)
        out = self.encoder(embeddings, src_key_padding_mask=attention_mask == 0)
        return out


def build():
    return TinyBert().eval()


def inputs(batch: int):
    ids = torch.randint(4, 30, (batch, 7))
    ids[:, -2:] = 0  # right padding, and no attention mask: the eager model would warn
    return (ids,)
