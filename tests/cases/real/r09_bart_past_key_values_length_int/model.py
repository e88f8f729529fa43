"""Decoder positions offset by the number of tokens already in the cache, passed as a Python int.

Imitates transformers/models/bart/modeling_bart.py: BartLearnedPositionalEmbedding.forward
(arange(past_key_values_length, past_key_values_length + seq_len)) and the embedding part of
BartDecoder.forward, called once per generated token with a growing past_key_values_length.
"""
import torch
from torch import nn


class BartLearnedPositionalEmbedding(nn.Embedding):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        self.offset = 2
        super().__init__(num_embeddings + self.offset, embedding_dim)

    def forward(self, input_ids, past_key_values_length: int = 0, position_ids=None):
        if position_ids is None:
            bsz, seq_len = input_ids.shape[:2]
            position_ids = torch.arange(
                past_key_values_length, past_key_values_length + seq_len, dtype=torch.long, device=self.weight.device
            ).expand(bsz, -1)
        else:
            position_ids = position_ids.unsqueeze(0)
        return super().forward(position_ids + self.offset)


class BartScaledWordEmbedding(nn.Embedding):
    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int, embed_scale: float = 1.0):
        super().__init__(num_embeddings, embedding_dim, padding_idx)
        self.embed_scale = embed_scale

    def forward(self, input_ids):
        return super().forward(input_ids) * self.embed_scale


class BartDecoderEmbeddings(nn.Module):
    def __init__(self, vocab_size: int = 64, d_model: int = 16, max_position_embeddings: int = 64):
        super().__init__()
        self.embed_tokens = BartScaledWordEmbedding(vocab_size, d_model, padding_idx=1, embed_scale=d_model**0.5)
        self.embed_positions = BartLearnedPositionalEmbedding(max_position_embeddings, d_model)
        self.layernorm_embedding = nn.LayerNorm(d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, input_ids, past_key_values_length: int):
        input = input_ids
        input_shape = input.shape
        input_ids = input_ids.view(-1, input_shape[-1])
        inputs_embeds = self.embed_tokens(input_ids)
        positions = self.embed_positions(input, past_key_values_length)
        hidden_states = inputs_embeds + positions
        hidden_states = self.layernorm_embedding(hidden_states)
        return self.proj(hidden_states)


def build():
    return BartDecoderEmbeddings().eval()


def inputs(batch: int):
    # one decoding step: a single new token per sequence, `batch` tokens already cached
    return (torch.randint(2, 64, (2, 1)), batch)


EXPERIMENTS = {"prefill_then_steps": "call 1 is a prefill of 4 tokens with past_key_values_length=0, then one-token steps with past_key_values_length=4,5,6,10,19 (shape and int change together)"}


def experiment_prefill_then_steps_inputs(batch: int):
    if batch == 1:
        return (torch.randint(2, 64, (2, 4)), 0)
    return (torch.randint(2, 64, (2, 1)), 3 + batch)
