"""Weight init and embedding resizing (load-time code) in the same file as the forward.

Imitates transformers/models/bert/modeling_bert.py: BertPreTrainedModel._init_weights
(`module.weight.data[module.padding_idx].zero_()`, normal_ / fill_ per module type),
transformers/modeling_utils.py: PreTrainedModel._get_resized_embeddings (new_num_tokens
arithmetic, pad_to_multiple_of, `min(old_num_tokens, new_num_tokens)` copy) and
transformers/models/bert/modeling_bert.py: BertEmbeddings.forward (what is compiled).
"""
import math

import torch
from torch import nn


class BertEmbeddings(nn.Module):
    def __init__(self, vocab_size: int = 30, hidden_size: int = 16, max_position_embeddings: int = 32, pad_token_id: int = 0):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size, padding_idx=pad_token_id)
        self.position_embeddings = nn.Embedding(max_position_embeddings, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(max_position_embeddings).expand((1, -1)), persistent=False)
        self.initializer_range = 0.02
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=self.initializer_range)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=self.initializer_range)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def _get_resized_embeddings(self, old_embeddings: nn.Embedding, new_num_tokens=None, pad_to_multiple_of=None):
        if pad_to_multiple_of is not None:
            if not isinstance(pad_to_multiple_of, int):
                raise ValueError(f"Asking to pad the embedding matrix to a multiple of `{pad_to_multiple_of}`, which is not an integer.")
            if new_num_tokens is None:
                new_num_tokens = old_embeddings.weight.shape[0]
            new_num_tokens = ((new_num_tokens + pad_to_multiple_of - 1) // pad_to_multiple_of) * pad_to_multiple_of
        if new_num_tokens is None:
            return old_embeddings
        old_num_tokens, old_embedding_dim = old_embeddings.weight.size()
        if old_num_tokens == new_num_tokens:
            return old_embeddings
        new_embeddings = nn.Embedding(new_num_tokens, old_embedding_dim, padding_idx=old_embeddings.padding_idx)
        self._init_weights(new_embeddings)
        n = min(old_num_tokens, new_num_tokens)
        new_embeddings.weight.data[:n, :] = old_embeddings.weight.data[:n, :]
        if new_num_tokens > old_num_tokens:
            mean = old_embeddings.weight.data.mean(0)
            std = old_embeddings.weight.data.std(0) / math.sqrt(max(1, new_num_tokens - old_num_tokens))
            new_embeddings.weight.data[n:, :] = mean + std * torch.randn(new_num_tokens - n, old_embedding_dim)
        return new_embeddings

    def resize_token_embeddings(self, new_num_tokens=None, pad_to_multiple_of=None):
        self.word_embeddings = self._get_resized_embeddings(self.word_embeddings, new_num_tokens, pad_to_multiple_of)
        return self.word_embeddings

    def forward(self, input_ids, past_key_values_length: int = 0):
        seq_length = input_ids.shape[1]
        position_ids = self.position_ids[:, past_key_values_length : seq_length + past_key_values_length]
        embeddings = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        return self.LayerNorm(embeddings)


def build():
    model = BertEmbeddings()
    model.resize_token_embeddings(37, pad_to_multiple_of=8)  # 40 rows, as after adding special tokens
    return model.eval()


def inputs(batch: int):
    return (torch.randint(0, 40, (batch, 9)),)
