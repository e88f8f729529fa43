"""Causal LM head with loss helpers in the same file; the replayed calls pass no labels.

Imitates transformers/loss/loss_utils.py: fixed_cross_entropy and ForCausalLMLoss,
transformers/models/llama/modeling_llama.py: LlamaForCausalLM.forward (logits_to_keep slice,
`if labels is not None: loss = self.loss_function(...)`) and the token counting of
transformers/trainer.py: Trainer.get_batch_samples (`num_items_in_batch` summed over
micro-batches and turned into a Python number).
"""
from typing import Optional

import torch
import torch.nn as nn


def fixed_cross_entropy(source, target, num_items_in_batch: Optional[torch.Tensor] = None, ignore_index: int = -100,
                        **kwargs):
    reduction = "sum" if num_items_in_batch is not None else "mean"
    loss = nn.functional.cross_entropy(source, target, ignore_index=ignore_index, reduction=reduction)
    if reduction == "sum":
        if torch.is_tensor(num_items_in_batch):
            num_items_in_batch = num_items_in_batch.to(loss.device)
        loss = loss / num_items_in_batch
    return loss


def ForCausalLMLoss(logits, labels, vocab_size: int, num_items_in_batch=None, ignore_index: int = -100,
                    shift_labels=None, **kwargs):
    logits = logits.float()
    if shift_labels is None:
        labels = nn.functional.pad(labels, (0, 1), value=ignore_index)
        shift_labels = labels[..., 1:].contiguous()
    logits = logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1)
    shift_labels = shift_labels.to(logits.device)
    return fixed_cross_entropy(logits, shift_labels, num_items_in_batch, ignore_index, **kwargs)


def get_batch_samples(batches, device=None):
    """Trainer-side: count the label tokens of a gradient-accumulation window (runs eagerly)."""
    num_items_in_batch = None
    if len(batches) > 0 and "labels" in batches[0]:
        num_items_in_batch = sum([(batch["labels"].ne(-100)).sum() for batch in batches])
        if torch.is_tensor(num_items_in_batch):
            num_items_in_batch = num_items_in_batch.item()
        if num_items_in_batch == 0:
            num_items_in_batch = None
    return batches, num_items_in_batch


class LlamaForCausalLM(nn.Module):
    def __init__(self, vocab_size: int = 48, hidden_size: int = 16):
        super().__init__()
        self.vocab_size = vocab_size
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)
        self.model = nn.Sequential(nn.Linear(hidden_size, hidden_size), nn.SiLU(), nn.Linear(hidden_size, hidden_size))
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)
        self.loss_function = ForCausalLMLoss

    def forward(self, input_ids, labels=None, logits_to_keep=0, **kwargs):
        hidden_states = self.model(self.embed_tokens(input_ids))
        slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
        logits = self.lm_head(hidden_states[:, slice_indices, :])
        loss = None
        if labels is not None:
            loss = self.loss_function(logits=logits, labels=labels, vocab_size=self.vocab_size, **kwargs)
        return (loss, logits) if loss is not None else (logits,)


def build():
    return LlamaForCausalLM().eval()


def inputs(batch: int):
    return (torch.randint(0, 48, (batch, 7)),)
