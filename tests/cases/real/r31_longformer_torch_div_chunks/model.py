"""Longformer sliding-window scores: sequence split into overlapping chunks with torch.div sizes.

Imitates transformers/models/longformer/modeling_longformer.py:
LongformerSelfAttention._chunk (`torch.div(hidden_states.size(1), window_overlap * 2,
rounding_mode="trunc")` inside .view, as_strided overlap), _pad_and_transpose_last_two_dims and
_sliding_chunks_query_key_matmul (the seq_len assert, `chunks_count = torch.div(seq_len,
window_overlap, rounding_mode="trunc") - 1`, new_zeros sized by chunks_count + 1), without the
invalid-location masking.
"""
import torch
from torch import nn


class LongformerSelfAttentionLite(nn.Module):
    def __init__(self, hidden_size: int = 16, num_heads: int = 2, attention_window: int = 4):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.one_sided_attn_window_size = attention_window // 2
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)

    @staticmethod
    def _chunk(hidden_states, window_overlap, onnx_export: bool = False):
        if not onnx_export:
            hidden_states = hidden_states.view(
                hidden_states.size(0),
                torch.div(hidden_states.size(1), (window_overlap * 2), rounding_mode="trunc"),
                window_overlap * 2,
                hidden_states.size(2),
            )
            chunk_size = list(hidden_states.size())
            chunk_size[1] = chunk_size[1] * 2 - 1
            chunk_stride = list(hidden_states.stride())
            chunk_stride[1] = chunk_stride[1] // 2
            return hidden_states.as_strided(size=chunk_size, stride=chunk_stride)
        return hidden_states.unfold(dimension=1, size=window_overlap * 2, step=window_overlap).transpose(2, 3)

    @staticmethod
    def _pad_and_transpose_last_two_dims(hidden_states_padded, padding):
        hidden_states_padded = nn.functional.pad(hidden_states_padded, padding)
        hidden_states_padded = hidden_states_padded.view(
            *hidden_states_padded.size()[:-2], hidden_states_padded.size(-1), hidden_states_padded.size(-2)
        )
        return hidden_states_padded

    def _sliding_chunks_query_key_matmul(self, query, key, window_overlap: int):
        batch_size, seq_len, num_heads, head_dim = query.size()
        assert seq_len % (window_overlap * 2) == 0, (
            f"Sequence length should be multiple of {window_overlap * 2}. Given {seq_len}"
        )
        assert query.size() == key.size()

        chunks_count = torch.div(seq_len, window_overlap, rounding_mode="trunc") - 1

        query = query.transpose(1, 2).reshape(batch_size * num_heads, seq_len, head_dim)
        key = key.transpose(1, 2).reshape(batch_size * num_heads, seq_len, head_dim)
        query = self._chunk(query, window_overlap)
        key = self._chunk(key, window_overlap)

        diagonal_chunked_attention_scores = torch.einsum("bcxd,bcyd->bcxy", (query, key))
        diagonal_chunked_attention_scores = self._pad_and_transpose_last_two_dims(
            diagonal_chunked_attention_scores, padding=(0, 0, 0, 1)
        )
        diagonal_attention_scores = diagonal_chunked_attention_scores.new_zeros(
            (batch_size * num_heads, chunks_count + 1, window_overlap, window_overlap * 2 + 1)
        )
        diagonal_attention_scores[:, :-1, :, window_overlap:] = diagonal_chunked_attention_scores[
            :, :, :window_overlap, : window_overlap + 1
        ]
        diagonal_attention_scores[:, -1, :, window_overlap:] = diagonal_chunked_attention_scores[
            :, -1, window_overlap:, : window_overlap + 1
        ]
        diagonal_attention_scores[:, 1:, :, :window_overlap] = diagonal_chunked_attention_scores[
            :, :, -(window_overlap + 1) : -1, window_overlap + 1 :
        ]
        diagonal_attention_scores = diagonal_attention_scores.view(
            batch_size, num_heads, seq_len, 2 * window_overlap + 1
        ).transpose(2, 1)
        return diagonal_attention_scores

    def forward(self, hidden_states):
        batch_size, seq_len, embed_dim = hidden_states.size()
        query_vectors = self.query(hidden_states).view(batch_size, seq_len, self.num_heads, self.head_dim)
        key_vectors = self.key(hidden_states).view(batch_size, seq_len, self.num_heads, self.head_dim)
        attn_scores = self._sliding_chunks_query_key_matmul(query_vectors, key_vectors, self.one_sided_attn_window_size)
        return attn_scores.softmax(-1)


def build():
    return LongformerSelfAttentionLite().eval()


def inputs(batch: int):
    return (torch.randn(2, 4 * (batch + 1), 16),)  # sequence 8, 12, 16, 20, 36, 72: multiples of 2 * window_overlap
