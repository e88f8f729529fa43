"""Feed-forward applied chunk by chunk along the sequence to save memory.

Imitates transformers/pytorch_utils.py: apply_chunking_to_forward (inspect.signature arity
check, divisibility ValueError, `num_chunks = shape // chunk_size`, tuple(chunk(...)), zip) as
used by transformers/models/bert/modeling_bert.py: BertLayer.forward / feed_forward_chunk
(chunk_size_feed_forward > 0), plus a GEGLU-style `.chunk(2, dim=-1)` from
diffusers/models/activations.py: GEGLU.forward.
"""
import inspect

import torch
from torch import nn


def apply_chunking_to_forward(forward_fn, chunk_size: int, chunk_dim: int, *input_tensors):
    assert len(input_tensors) > 0, f"{input_tensors} has to be a tuple/list of tensors"

    num_args_in_forward_chunk_fn = len(inspect.signature(forward_fn).parameters)
    if num_args_in_forward_chunk_fn != len(input_tensors):
        raise ValueError(
            f"forward_chunk_fn expects {num_args_in_forward_chunk_fn} arguments, but only {len(input_tensors)} input "
            "tensors are given"
        )

    if chunk_size > 0:
        tensor_shape = input_tensors[0].shape[chunk_dim]
        for input_tensor in input_tensors:
            if input_tensor.shape[chunk_dim] != tensor_shape:
                raise ValueError(
                    f"All input tenors have to be of the same shape: {tensor_shape}, "
                    f"found shape {input_tensor.shape[chunk_dim]}"
                )
        if input_tensors[0].shape[chunk_dim] % chunk_size != 0:
            raise ValueError(
                f"The dimension to be chunked {input_tensors[0].shape[chunk_dim]} has to be a multiple of the chunk "
                f"size {chunk_size}"
            )
        num_chunks = input_tensors[0].shape[chunk_dim] // chunk_size
        input_tensors_chunks = tuple(input_tensor.chunk(num_chunks, dim=chunk_dim) for input_tensor in input_tensors)
        output_chunks = tuple(forward_fn(*input_tensors_chunk) for input_tensors_chunk in zip(*input_tensors_chunks))
        return torch.cat(output_chunks, dim=chunk_dim)

    return forward_fn(*input_tensors)


class GEGLU(nn.Module):
    def __init__(self, dim_in: int, dim_out: int):
        super().__init__()
        self.proj = nn.Linear(dim_in, dim_out * 2)

    def forward(self, hidden_states):
        hidden_states, gate = self.proj(hidden_states).chunk(2, dim=-1)
        return hidden_states * nn.functional.gelu(gate)


class BertLayer(nn.Module):
    def __init__(self, dim: int = 16, chunk_size_feed_forward: int = 2):
        super().__init__()
        self.chunk_size_feed_forward = chunk_size_feed_forward
        self.seq_len_dim = 1
        self.attention = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.intermediate = GEGLU(dim, 2 * dim)
        self.output = nn.Linear(2 * dim, dim)
        self.norm = nn.LayerNorm(dim)

    def feed_forward_chunk(self, attention_output):
        intermediate_output = self.intermediate(attention_output)
        return self.norm(self.output(intermediate_output) + attention_output)

    def forward(self, hidden_states):
        attention_output = self.attention(hidden_states, hidden_states, hidden_states, need_weights=False)[0]
        layer_output = apply_chunking_to_forward(
            self.feed_forward_chunk, self.chunk_size_feed_forward, self.seq_len_dim, attention_output
        )
        return layer_output


def build():
    return BertLayer().eval()


def inputs(batch: int):
    return (torch.randn(2, 2 * (batch + 1), 16),)  # sequence 4, 6, 8, 10, 18, 36: always a multiple of 2
