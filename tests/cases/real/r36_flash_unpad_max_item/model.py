"""Varlen (flash-attention style) path: unpad tokens with the mask, carry max_seqlen as a Python int.

Imitates transformers/modeling_flash_attention_utils.py: _index_first_axis, _unpad_input,
_pad_input, _get_unpad_data (`max_seqlen_in_batch = seqlens_in_batch.max().item()`, nonzero
indices) and _upad_input (query_length == kv_seq_len branch); the varlen kernel is replaced by a
per-token stand-in that uses max_seqlen the way a kernel launch would (as a Python int).
"""
import torch
import torch.nn.functional as F
from torch import nn


def _index_first_axis(tensor, indices):
    reshaped_tensor = tensor.reshape(-1, *tensor.shape[2:])
    return reshaped_tensor[indices]


def _pad_input(hidden_states, indices, batch, seqlen):
    dim = hidden_states.shape[1:]
    output = torch.zeros((batch * seqlen), *dim, device=hidden_states.device, dtype=hidden_states.dtype)
    output[indices] = hidden_states
    return output.view(batch, seqlen, *dim)


def _get_unpad_data(attention_mask):
    seqlens_in_batch = attention_mask.sum(dim=-1, dtype=torch.int32)
    indices = torch.nonzero(attention_mask.flatten(), as_tuple=False).flatten()
    max_seqlen_in_batch = seqlens_in_batch.max().item()
    cu_seqlens = F.pad(torch.cumsum(seqlens_in_batch, dim=0, dtype=torch.int32), (1, 0))
    return indices, cu_seqlens, max_seqlen_in_batch


def _upad_input(query_layer, key_layer, value_layer, attention_mask, query_length: int):
    indices_k, cu_seqlens_k, max_seqlen_in_batch_k = _get_unpad_data(attention_mask)
    if key_layer.shape[1] > (seq_len := attention_mask.shape[-1]):
        key_layer, value_layer = key_layer[:, :seq_len, :, :], value_layer[:, :seq_len, :, :]
    batch_size, kv_seq_len, num_key_value_heads, head_dim = key_layer.shape
    key_layer = _index_first_axis(key_layer, indices_k)
    value_layer = _index_first_axis(value_layer, indices_k)
    if query_length == kv_seq_len:
        query_layer = _index_first_axis(query_layer, indices_k)
        cu_seqlens_q = cu_seqlens_k
        max_seqlen_in_batch_q = max_seqlen_in_batch_k
        indices_q = indices_k
    else:
        raise NotImplementedError("decode / left-padded query paths are not exercised here")
    return (query_layer, key_layer, value_layer, indices_q, (cu_seqlens_q, cu_seqlens_k),
            (max_seqlen_in_batch_q, max_seqlen_in_batch_k))


def varlen_attention_stand_in(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q: int, max_seqlen_k: int):
    scale = 1.0 / max_seqlen_k
    return v * torch.sigmoid((q * k).sum(-1, keepdim=True)) * scale + q


class FlashAttentionLite(nn.Module):
    def __init__(self, hidden: int = 16, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.o_proj = nn.Linear(hidden, hidden)

    def forward(self, hidden_states, attention_mask):
        batch_size, query_length, hidden = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(batch_size, query_length, 3, self.heads, -1).unbind(2)
        q, k, v, indices_q, cu_seq_lens, max_seq_lens = _upad_input(q, k, v, attention_mask, query_length)
        cu_seqlens_q, cu_seqlens_k = cu_seq_lens
        max_seqlen_in_batch_q, max_seqlen_in_batch_k = max_seq_lens
        attn_output_unpad = varlen_attention_stand_in(q, k, v, cu_seqlens_q, cu_seqlens_k,
                                                      max_seqlen_in_batch_q, max_seqlen_in_batch_k)
        attn_output = _pad_input(attn_output_unpad, indices_q, batch_size, query_length)
        return self.o_proj(attn_output.reshape(batch_size, query_length, hidden))


def build():
    return FlashAttentionLite().eval()


def inputs(batch: int):
    seq = 8
    length = min(seq, batch + 2)  # longest sequence in the batch: 3, 4, 5, 6, 8, 8
    mask = torch.zeros(batch, seq, dtype=torch.long)
    for i in range(batch):
        mask[i, : max(1, length - i % 2)] = 1
    return (torch.randn(batch, seq, 16), mask)
