"""Length regulator: repeat each phoneme embedding by its predicted duration, pad to the longest.

Imitates transformers/models/fastspeech2_conformer/modeling_fastspeech2_conformer.py:
length_regulator (`if duration_labels.sum() == 0`, `max_len = torch.sum(duration_labels, dim=1).max()`
used as a size, the per-row zip loop with repeat_interleave by a tensor),
FastSpeech2ConformerDurationPredictor.forward (eval branch: rounded durations) and the call site in
FastSpeech2ConformerModel.forward.
"""
import torch
from torch import nn


def length_regulator(encoded_embeddings, duration_labels, speaking_speed=1.0):
    if speaking_speed <= 0:
        raise ValueError("`speaking_speed` must be greater than 0.")
    elif speaking_speed != 1.0:
        duration_labels = torch.round(duration_labels.float() * speaking_speed).long()

    if duration_labels.sum() == 0:
        duration_labels[duration_labels.sum(dim=1).eq(0)] = 1

    max_len = torch.sum(duration_labels, dim=1).max()

    hidden_states = torch.zeros(
        (encoded_embeddings.size(0), max_len, encoded_embeddings.size(2)),
        dtype=torch.float,
        device=encoded_embeddings.device,
    )
    for i, (encoded_embedding, target_duration) in enumerate(zip(encoded_embeddings, duration_labels)):
        repeated = torch.repeat_interleave(encoded_embedding, target_duration, dim=0)
        hidden_states[i, : repeated.size(0)] = repeated
    return hidden_states


class DurationPredictor(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.conv_layers = nn.ModuleList([nn.Conv1d(dim, dim, 3, padding=1), nn.ReLU()])
        self.linear = nn.Linear(dim, 1)
        self.log_domain_offset = 1.0

    def forward(self, encoder_hidden_states):
        hidden_states = encoder_hidden_states.transpose(1, -1)
        for layer in self.conv_layers:
            hidden_states = layer(hidden_states)
        hidden_states = self.linear(hidden_states.transpose(1, -1)).squeeze(-1)
        if not self.training:
            hidden_states = torch.clamp(torch.round(hidden_states.exp() - self.log_domain_offset), min=0).long()
        return hidden_states


class FastSpeech2Lite(nn.Module):
    def __init__(self, vocab: int = 20, dim: int = 8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.encoder = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        self.duration_predictor = DurationPredictor(dim)
        self.speaking_speed = 1.0
        self.decoder = nn.Linear(dim, 4)

    def forward(self, input_ids, duration_mask):
        hidden_states = self.encoder(self.embed(input_ids))
        duration_predictions = self.duration_predictor(hidden_states)
        duration_predictions = duration_predictions.masked_fill(duration_mask, 0.0)
        hidden_states = length_regulator(hidden_states, duration_predictions, self.speaking_speed)
        return self.decoder(hidden_states)


def build():
    return FastSpeech2Lite().eval()


def inputs(batch: int):
    ids = torch.randint(0, 20, (batch, 5))
    mask = torch.zeros(batch, 5, dtype=torch.bool)
    mask[:, -1] = True
    return (ids, mask)
