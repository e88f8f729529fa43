"""CLIP text tower pooling: gather the hidden state at the EOS position of every row.

Imitates transformers/models/clip/modeling_clip.py: CLIPTextTransformer.forward (the
`if self.eos_token_id == 2:` legacy branch with `input_ids.to(dtype=torch.int, ...).argmax(dim=-1)`
and the `(input_ids.to(dtype=torch.int, device=...) == self.eos_token_id).int().argmax(dim=-1)`
branch, advanced indexing with `torch.arange(last_hidden_state.shape[0])`), CLIPTextEmbeddings.forward
(max_position_embedding check) and the causal mask set-up.
"""
from types import SimpleNamespace

import torch
from torch import nn


class CLIPTextEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.token_embedding = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embedding = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)), persistent=False)

    def forward(self, input_ids=None, position_ids=None, inputs_embeds=None):
        seq_length = input_ids.shape[-1] if input_ids is not None else inputs_embeds.shape[-2]
        max_position_embedding = self.position_embedding.weight.shape[0]
        if seq_length > max_position_embedding:
            raise ValueError(
                f"Sequence length must be less than max_position_embeddings (got `sequence length`: "
                f"{seq_length} and max_position_embeddings: {max_position_embedding}"
            )
        if position_ids is None:
            position_ids = self.position_ids[:, :seq_length]
        if inputs_embeds is None:
            inputs_embeds = self.token_embedding(input_ids)
        return inputs_embeds + self.position_embedding(position_ids)


class CLIPTextTransformer(nn.Module):
    def __init__(self, eos_token_id: int = 2):
        super().__init__()
        config = SimpleNamespace(vocab_size=50, hidden_size=16, max_position_embeddings=32)
        self.embeddings = CLIPTextEmbeddings(config)
        self.encoder = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        self.final_layer_norm = nn.LayerNorm(16)
        self.eos_token_id = eos_token_id

    def forward(self, input_ids):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        hidden_states = self.embeddings(input_ids=input_ids)
        causal_attention_mask = torch.full((input_shape[-1], input_shape[-1]), float("-inf")).triu(1)
        last_hidden_state = self.encoder(hidden_states, src_mask=causal_attention_mask)
        last_hidden_state = self.final_layer_norm(last_hidden_state)

        if self.eos_token_id == 2:
            # The `eos_token_id` was incorrect before PR #24773: Let's keep what have been done here.
            pooled_output = last_hidden_state[
                torch.arange(last_hidden_state.shape[0], device=last_hidden_state.device),
                input_ids.to(dtype=torch.int, device=last_hidden_state.device).argmax(dim=-1),
            ]
        else:
            # The config gets updated `eos_token_id` from PR #24773 (so the use of extra new tokens is possible)
            pooled_output = last_hidden_state[
                torch.arange(last_hidden_state.shape[0], device=last_hidden_state.device),
                (input_ids.to(dtype=torch.int, device=last_hidden_state.device) == self.eos_token_id).int().argmax(dim=-1),
            ]
        return last_hidden_state, pooled_output


def build():
    return CLIPTextTransformer(eos_token_id=49).eval()


def inputs(batch: int):
    ids = torch.randint(3, 40, (batch, 7))
    ids[:, 5] = 49  # eos
    return (ids,)
