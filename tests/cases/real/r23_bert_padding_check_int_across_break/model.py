"""BERT embeddings whose padding warning runs inside the compiled forward (no tracing early-out).

Imitates transformers/models/bert/modeling_bert.py: BertModel.forward (input_shape / batch_size /
seq_length, buffered token_type_ids expanded to (batch_size, seq_length), the extended attention
mask) with transformers/modeling_utils.py: warn_if_padding_and_no_attention_mask as it is called
before the embeddings, here without the `is_tracing` early return that r05 keeps.
"""
import functools
import logging
from types import SimpleNamespace

import torch
from torch import nn

logger = logging.getLogger("r23_bert")


@functools.lru_cache(None)
def warning_once(msg: str):
    logger.warning(msg)


class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(2, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size)
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)), persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long), persistent=False)

    def forward(self, input_ids, token_type_ids=None, past_key_values_length: int = 0):
        input_shape = input_ids.size()
        seq_length = input_shape[1]
        position_ids = self.position_ids[:, past_key_values_length : seq_length + past_key_values_length]
        if token_type_ids is None:
            buffered_token_type_ids = self.token_type_ids[:, :seq_length]
            token_type_ids = buffered_token_type_ids.expand(input_shape[0], seq_length)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(position_ids)
        return self.LayerNorm(embeddings)


class BertModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(vocab_size=40, hidden_size=16, pad_token_id=0, max_position_embeddings=64)
        self.embeddings = BertEmbeddings(self.config)
        self.encoder = nn.Sequential(nn.Linear(16, 16), nn.GELU())

    def warn_if_padding_and_no_attention_mask(self, input_ids, attention_mask):
        if (attention_mask is not None) or (self.config.pad_token_id is None):
            return
        if self.config.pad_token_id in input_ids[:, [-1, 0]]:
            warning_once("We strongly recommend passing in an `attention_mask` since your input_ids may be padded.")

    def forward(self, input_ids, attention_mask=None):
        input_shape = input_ids.size()
        batch_size, seq_length = input_shape
        self.warn_if_padding_and_no_attention_mask(input_ids, attention_mask)
        if attention_mask is None:
            attention_mask = torch.ones((batch_size, seq_length), device=input_ids.device)
        extended_attention_mask = (1.0 - attention_mask[:, None, None, :]) * torch.finfo(torch.float32).min
        embedding_output = self.embeddings(input_ids=input_ids)
        hidden = self.encoder(embedding_output)
        scores = hidden @ hidden.transpose(1, 2) + extended_attention_mask[:, 0]
        return scores.softmax(-1) @ hidden


def build():
    return BertModel().eval()


def inputs(batch: int):
    ids = torch.randint(1, 40, (2, batch + 3))  # sequence length 4, 5, 6, 7, 11, 20; no padding tokens
    return (ids,)
