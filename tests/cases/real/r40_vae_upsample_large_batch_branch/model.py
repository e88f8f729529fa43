"""Tiny VAE: encode to a diagonal Gaussian, take its mode, decode with nearest-neighbour upsampling.

Imitates diffusers/models/autoencoders/vae.py: DiagonalGaussianDistribution (chunk on channels,
clamp, `if self.deterministic`, mode/sample) and diffusers/models/upsampling.py: Upsample2D.forward
(`assert hidden_states.shape[1] == self.channels`, `if hidden_states.shape[0] >= 64:` contiguous
workaround, `scale_factor = 2 if output_size is None else max(...)`,
`if hidden_states.numel() * scale_factor > pow(2, 31)`), as used by
diffusers/models/autoencoders/autoencoder_kl.py: AutoencoderKL.forward (sample_posterior=False).
"""
import torch
import torch.nn.functional as F
from torch import nn


class DiagonalGaussianDistribution(object):
    def __init__(self, parameters, deterministic: bool = False):
        self.parameters = parameters
        self.mean, self.logvar = torch.chunk(parameters, 2, dim=1)
        self.logvar = torch.clamp(self.logvar, -30.0, 20.0)
        self.deterministic = deterministic
        self.std = torch.exp(0.5 * self.logvar)
        self.var = torch.exp(self.logvar)
        if self.deterministic:
            self.var = self.std = torch.zeros_like(self.mean, device=self.parameters.device, dtype=self.parameters.dtype)

    def sample(self, generator=None):
        sample = torch.randn(self.mean.shape, generator=generator, device=self.parameters.device, dtype=self.parameters.dtype)
        return self.mean + self.std * sample

    def mode(self):
        return self.mean


class Upsample2D(nn.Module):
    def __init__(self, channels: int, use_conv: bool = True, out_channels=None):
        super().__init__()
        self.channels = channels
        self.out_channels = out_channels or channels
        self.use_conv = use_conv
        self.use_conv_transpose = False
        self.interpolate = True
        self.norm = None
        self.conv = nn.Conv2d(self.channels, self.out_channels, 3, padding=1) if use_conv else None

    def forward(self, hidden_states, output_size=None):
        assert hidden_states.shape[1] == self.channels
        if self.norm is not None:
            hidden_states = self.norm(hidden_states.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        if self.use_conv_transpose:
            return self.conv(hidden_states)
        # upsample_nearest_nhwc fails with large batch sizes. see https://github.com/huggingface/diffusers/issues/984
        if hidden_states.shape[0] >= 64:
            hidden_states = hidden_states.contiguous()
        if self.interpolate:
            scale_factor = (
                2 if output_size is None else max([f / s for f, s in zip(output_size, hidden_states.shape[-2:])])
            )
            if hidden_states.numel() * scale_factor > pow(2, 31):
                hidden_states = hidden_states.contiguous()
            if output_size is None:
                hidden_states = F.interpolate(hidden_states, scale_factor=2.0, mode="nearest")
            else:
                hidden_states = F.interpolate(hidden_states, size=output_size, mode="nearest")
        if self.use_conv:
            hidden_states = self.conv(hidden_states)
        return hidden_states


class TinyAutoencoderKL(nn.Module):
    def __init__(self, latent_channels: int = 2):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.SiLU(), nn.Conv2d(8, 2 * latent_channels, 1))
        self.post_quant_conv = nn.Conv2d(latent_channels, 8, 1)
        self.up = Upsample2D(8)
        self.conv_out = nn.Conv2d(8, 3, 3, padding=1)

    def forward(self, sample, sample_posterior: bool = False, generator=None):
        posterior = DiagonalGaussianDistribution(self.encoder(sample))
        if sample_posterior:
            z = posterior.sample(generator=generator)
        else:
            z = posterior.mode()
        dec = self.up(self.post_quant_conv(z))
        return self.conv_out(dec)


def build():
    return TinyAutoencoderKL().eval()


def inputs(batch: int):
    return (torch.randn(batch, 3, 8, 8),)


EXPERIMENTS = {"large_batches": "batch sizes 59, 60, 61, 62, 66, 75 instead of 1..17 (call b uses 58 + b): crosses the >= 64 workaround"}


def experiment_large_batches_inputs(batch: int):
    return (torch.randn(58 + batch, 3, 8, 8),)
