"""MusicGen decoder: sum one embedding per codebook, one LM head per codebook.

Imitates transformers/models/musicgen/modeling_musicgen.py: MusicgenDecoder.forward
(`input_ids.reshape(-1, self.num_codebooks, ...)`, `sum(... for codebook in range(num_codebooks))`,
LayerDrop with random.uniform), MusicgenSinusoidalPositionalEmbedding (make_weights / forward
with the `seq_len + past_key_values_length > self.weights.size(0)` refresh) and
MusicgenForCausalLM.forward (`torch.stack([head(hidden_states) for head in self.lm_heads], dim=1)`).
"""
import math
import random

import torch
from torch import nn


class MusicgenSinusoidalPositionalEmbedding(nn.Module):
    def __init__(self, num_positions: int, embedding_dim: int):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.make_weights(num_positions, embedding_dim)

    def make_weights(self, num_embeddings: int, embedding_dim: int):
        emb_weights = self.get_embedding(num_embeddings, embedding_dim)
        if hasattr(self, "weights"):
            emb_weights = emb_weights.to(dtype=self.weights.dtype, device=self.weights.device)
        self.register_buffer("weights", emb_weights, persistent=False)

    @staticmethod
    def get_embedding(num_embeddings: int, embedding_dim: int):
        half_dim = embedding_dim // 2
        emb = math.log(10000) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim, dtype=torch.int64).float() * -emb)
        emb = torch.arange(num_embeddings, dtype=torch.int64).float().unsqueeze(1) * emb.unsqueeze(0)
        emb = torch.cat([torch.cos(emb), torch.sin(emb)], dim=1).view(num_embeddings, -1)
        if embedding_dim % 2 == 1:
            emb = torch.cat([emb, torch.zeros(num_embeddings, 1)], dim=1)
        return emb.to(torch.get_default_dtype())

    @torch.no_grad()
    def forward(self, input_ids, past_key_values_length: int = 0):
        bsz, codebooks, seq_len = input_ids.size()
        position_ids = torch.arange(seq_len, device=input_ids.device) + past_key_values_length
        if seq_len + past_key_values_length > self.weights.size(0):
            self.make_weights(seq_len + past_key_values_length, self.embedding_dim)
        return self.weights.index_select(0, position_ids.view(-1)).detach()


class MusicgenForCausalLM(nn.Module):
    def __init__(self, vocab_size: int = 32, hidden: int = 16, num_codebooks: int = 4, layers: int = 2):
        super().__init__()
        self.num_codebooks = num_codebooks
        self.layerdrop = 0.1
        self.embed_tokens = nn.ModuleList([nn.Embedding(vocab_size + 1, hidden) for _ in range(num_codebooks)])
        self.embed_positions = MusicgenSinusoidalPositionalEmbedding(32, hidden)
        self.layers = nn.ModuleList(nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, hidden)) for _ in range(layers))
        self.layer_norm = nn.LayerNorm(hidden)
        self.lm_heads = nn.ModuleList([nn.Linear(hidden, vocab_size, bias=False) for _ in range(num_codebooks)])

    def forward(self, input_ids):
        # (bsz * codebooks, seq_len) -> (bsz, codebooks, seq_len)
        input = input_ids.reshape(-1, self.num_codebooks, input_ids.shape[-1])
        bsz, num_codebooks, seq_len = input.shape
        past_key_values_length = 0
        inputs_embeds = sum(self.embed_tokens[codebook](input[:, codebook]) for codebook in range(num_codebooks))
        positions = self.embed_positions(input, past_key_values_length)
        hidden_states = inputs_embeds + positions.to(inputs_embeds.device)
        for idx, decoder_layer in enumerate(self.layers):
            dropout_probability = random.uniform(0, 1)
            if self.training and (dropout_probability < self.layerdrop):
                continue
            hidden_states = hidden_states + decoder_layer(hidden_states)
        hidden_states = self.layer_norm(hidden_states)
        lm_logits = torch.stack([head(hidden_states) for head in self.lm_heads], dim=1)
        # (bsz, num_codebooks, seq_len, vocab_size) -> (bsz * num_codebooks, seq_len, vocab_size)
        return lm_logits.reshape(-1, *lm_logits.shape[2:])


def build():
    return MusicgenForCausalLM().eval()


def inputs(batch: int):
    return (torch.randint(0, 32, (batch * 4, 6)),)
