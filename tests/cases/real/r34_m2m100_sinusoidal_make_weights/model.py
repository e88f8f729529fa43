"""Sinusoidal position table that grows (a new buffer is registered) when a longer sequence arrives.

Imitates transformers/models/m2m_100/modeling_m2m_100.py: M2M100SinusoidalPositionalEmbedding
(make_weights registering `self.weights` as a buffer, get_embedding, forward with
`max_pos = self.padding_idx + 1 + seq_len + past_key_values_length` and
`if not (is_torchdynamo_compiling() and torch.is_tensor(max_pos)) and max_pos > self.weights.size(0):`
refresh, create_position_ids_from_input_ids) used by an M2M100-style encoder embedding.
"""
import math

import torch
from torch import nn


class M2M100SinusoidalPositionalEmbedding(nn.Module):
    def __init__(self, num_positions: int, embedding_dim: int, padding_idx=None):
        super().__init__()
        self.offset = 2
        self.num_positions = num_positions
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.make_weights(num_positions + self.offset, embedding_dim, padding_idx)

    def make_weights(self, num_embeddings: int, embedding_dim: int, padding_idx=None):
        emb_weights = self.get_embedding(num_embeddings, embedding_dim, padding_idx)
        if hasattr(self, "weights"):
            # in forward put the weights on the correct dtype and device of the param
            emb_weights = emb_weights.to(dtype=self.weights.dtype, device=self.weights.device)
        self.register_buffer("weights", emb_weights, persistent=False)

    @staticmethod
    def get_embedding(num_embeddings: int, embedding_dim: int, padding_idx=None):
        half_dim = embedding_dim // 2
        emb = math.log(10000) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim, dtype=torch.int64).float() * -emb)
        emb = torch.arange(num_embeddings, dtype=torch.int64).float().unsqueeze(1) * emb.unsqueeze(0)
        emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1).view(num_embeddings, -1)
        if embedding_dim % 2 == 1:
            emb = torch.cat([emb, torch.zeros(num_embeddings, 1)], dim=1)
        if padding_idx is not None:
            emb[padding_idx, :] = 0
        return emb.to(torch.get_default_dtype())

    @staticmethod
    def create_position_ids_from_input_ids(input_ids, padding_idx, past_key_values_length=0):
        mask = input_ids.ne(padding_idx).int()
        incremental_indices = (torch.cumsum(mask, dim=1).type_as(mask) + past_key_values_length) * mask
        return incremental_indices.long() + padding_idx

    @torch.no_grad()
    def forward(self, input_ids, past_key_values_length: int = 0):
        bsz, seq_len = input_ids.size()
        position_ids = self.create_position_ids_from_input_ids(input_ids, self.padding_idx, past_key_values_length)
        max_pos = self.padding_idx + 1 + seq_len + past_key_values_length
        if not (torch.compiler.is_compiling() and torch.is_tensor(max_pos)) and max_pos > self.weights.size(0):
            self.make_weights(max_pos + self.offset, self.embedding_dim, self.padding_idx)
        return self.weights.index_select(0, position_ids.view(-1)).view(bsz, seq_len, self.weights.shape[-1]).detach()


class M2M100EncoderEmbeddings(nn.Module):
    def __init__(self, vocab_size: int = 40, d_model: int = 16, max_source_positions: int = 8, pad_token_id: int = 1):
        super().__init__()
        self.embed_scale = math.sqrt(d_model)
        self.embed_tokens = nn.Embedding(vocab_size, d_model, pad_token_id)
        self.embed_positions = M2M100SinusoidalPositionalEmbedding(max_source_positions, d_model, pad_token_id)
        self.layernorm = nn.LayerNorm(d_model)

    def forward(self, input_ids):
        inputs_embeds = self.embed_tokens(input_ids) * self.embed_scale
        embed_pos = self.embed_positions(input_ids)
        return self.layernorm(inputs_embeds + embed_pos)


def build():
    return M2M100EncoderEmbeddings().eval()


def inputs(batch: int):
    return (torch.randint(2, 40, (2, batch + 3)),)  # sequence 4, 5, 6, 7, 11, 20 against a 10-row table
