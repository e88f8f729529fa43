"""DPT: resize the position embedding to the image, then fold tokens back into a square grid.

Imitates transformers/models/dpt/modeling_dpt.py: DPTViTEmbeddings._resize_pos_embed and forward
(torch_int(posemb_grid.size(0) ** 0.5) on the stored grid), DPTReassembleStage.forward
(`size = torch_int(sequence_length**0.5)` on the token count of the current image) and
transformers/utils/generic.py: torch_int.
"""
from types import SimpleNamespace

import torch
from torch import nn


def torch_int(x):
    return x.to(torch.int64) if torch.jit.is_tracing() and isinstance(x, torch.Tensor) else int(x)


class DPTViTEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.cls_token = nn.Parameter(torch.zeros(1, 1, config.hidden_size))
        self.patch_embeddings = nn.Linear(3 * config.patch_size**2, config.hidden_size)
        num_patches = (config.image_size // config.patch_size) ** 2
        self.position_embeddings = nn.Parameter(torch.randn(1, num_patches + 1, config.hidden_size) * 0.02)

    def _resize_pos_embed(self, posemb, grid_size_height, grid_size_width, start_index=1):
        posemb_tok = posemb[:, :start_index]
        posemb_grid = posemb[0, start_index:]
        old_grid_size = torch_int(posemb_grid.size(0) ** 0.5)
        posemb_grid = posemb_grid.reshape(1, old_grid_size, old_grid_size, -1).permute(0, 3, 1, 2)
        posemb_grid = nn.functional.interpolate(posemb_grid, size=(grid_size_height, grid_size_width), mode="bilinear")
        posemb_grid = posemb_grid.permute(0, 2, 3, 1).reshape(1, grid_size_height * grid_size_width, -1)
        return torch.cat([posemb_tok, posemb_grid], dim=1)

    def forward(self, pixel_values):
        batch_size, num_channels, height, width = pixel_values.shape
        patch_size = self.config.patch_size
        position_embeddings = self._resize_pos_embed(self.position_embeddings, height // patch_size, width // patch_size)
        p = patch_size
        patches = pixel_values.reshape(batch_size, num_channels, height // p, p, width // p, p)
        patches = patches.permute(0, 2, 4, 1, 3, 5).flatten(3).flatten(1, 2)
        embeddings = self.patch_embeddings(patches)
        batch_size, seq_len, _ = embeddings.size()
        cls_tokens = self.cls_token.expand(batch_size, -1, -1)
        embeddings = torch.cat((cls_tokens, embeddings), dim=1)
        return embeddings + position_embeddings


class DPTReassembleStage(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.neck_ignore_stages = []
        self.readout_projects = nn.ModuleList(nn.Linear(2 * config.hidden_size, config.hidden_size) for _ in range(2))
        self.layers = nn.ModuleList(nn.Conv2d(config.hidden_size, config.hidden_size, 1) for _ in range(2))

    def forward(self, hidden_states, patch_height=None, patch_width=None):
        out = []
        for i, hidden_state in enumerate(hidden_states):
            if i not in self.neck_ignore_stages:
                cls_token, hidden_state = hidden_state[:, 0], hidden_state[:, 1:]
                batch_size, sequence_length, num_channels = hidden_state.shape
                if patch_height is not None and patch_width is not None:
                    hidden_state = hidden_state.reshape(batch_size, patch_height, patch_width, num_channels)
                else:
                    size = torch_int(sequence_length**0.5)
                    hidden_state = hidden_state.reshape(batch_size, size, size, num_channels)
                hidden_state = hidden_state.permute(0, 3, 1, 2).contiguous()
                feature_shape = hidden_state.shape
                if self.config.readout_type == "project":
                    hidden_state = hidden_state.flatten(2).permute((0, 2, 1))
                    readout = cls_token.unsqueeze(1).expand_as(hidden_state)
                    hidden_state = self.readout_projects[i](torch.cat((hidden_state, readout), -1))
                    hidden_state = hidden_state.permute(0, 2, 1).reshape(feature_shape)
                hidden_state = self.layers[i](hidden_state)
            out.append(hidden_state)
        return out


class DPTLite(nn.Module):
    def __init__(self):
        super().__init__()
        config = SimpleNamespace(hidden_size=16, patch_size=4, image_size=16, readout_type="project")
        self.embeddings = DPTViTEmbeddings(config)
        self.encoder = nn.ModuleList(nn.Sequential(nn.LayerNorm(16), nn.Linear(16, 16)) for _ in range(2))
        self.reassemble = DPTReassembleStage(config)

    def forward(self, pixel_values):
        hidden = self.embeddings(pixel_values)
        states = []
        for layer in self.encoder:
            hidden = hidden + layer(hidden)
            states.append(hidden)
        feats = self.reassemble(states)
        return sum(f.mean() for f in feats)


def build():
    return DPTLite().eval()


def inputs(batch: int):
    side = 4 * (batch + 1)  # square images 8, 12, 16, 20, 36, 72: token grids 2x2 ... 18x18
    return (torch.randn(2, 3, side, side),)
