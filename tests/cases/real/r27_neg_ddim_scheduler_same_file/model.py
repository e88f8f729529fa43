"""A denoiser and, in the same file, the DDIM scheduler that drives it (never compiled).

The scheduler imitates diffusers/schedulers/scheduling_ddim.py: DDIMScheduler.set_timesteps,
_get_variance, _threshold_sample and step (prev_timestep arithmetic, `if prev_timestep >= 0`,
`torch.quantile`, `if eta > 0`); the denoiser imitates the time-conditioned blocks of
diffusers/models/unets/unet_2d.py: UNet2DModel.forward. Only the denoiser is compiled.
"""
import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class DDIMSchedulerOutput:
    prev_sample: torch.Tensor
    pred_original_sample: torch.Tensor


class DDIMScheduler:
    def __init__(self, num_train_timesteps: int = 1000, clip_sample_range: float = 1.0, thresholding: bool = True,
                 dynamic_thresholding_ratio: float = 0.995, sample_max_value: float = 1.0):
        self.num_train_timesteps = num_train_timesteps
        self.clip_sample_range = clip_sample_range
        self.thresholding = thresholding
        self.dynamic_thresholding_ratio = dynamic_thresholding_ratio
        self.sample_max_value = sample_max_value
        betas = torch.linspace(1e-4, 0.02, num_train_timesteps)
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.final_alpha_cumprod = torch.tensor(1.0)
        self.num_inference_steps = None

    def set_timesteps(self, num_inference_steps: int):
        self.num_inference_steps = num_inference_steps
        step_ratio = self.num_train_timesteps // self.num_inference_steps
        self.timesteps = (torch.arange(0, num_inference_steps) * step_ratio).round().flip(0).to(torch.int64)

    def _get_variance(self, timestep: int, prev_timestep: int):
        alpha_prod_t = self.alphas_cumprod[timestep]
        alpha_prod_t_prev = self.alphas_cumprod[prev_timestep] if prev_timestep >= 0 else self.final_alpha_cumprod
        beta_prod_t = 1 - alpha_prod_t
        beta_prod_t_prev = 1 - alpha_prod_t_prev
        return (beta_prod_t_prev / beta_prod_t) * (1 - alpha_prod_t / alpha_prod_t_prev)

    def _threshold_sample(self, sample):
        batch_size, channels, *remaining_dims = sample.shape
        sample = sample.reshape(batch_size, channels * math.prod(remaining_dims))
        abs_sample = sample.abs()
        s = torch.quantile(abs_sample, self.dynamic_thresholding_ratio, dim=1)
        s = torch.clamp(s, min=1, max=self.sample_max_value)
        s = s.unsqueeze(1)
        sample = torch.clamp(sample, -s, s) / s
        return sample.reshape(batch_size, channels, *remaining_dims)

    def step(self, model_output, timestep: int, sample, eta: float = 0.0, generator=None, return_dict: bool = True):
        if self.num_inference_steps is None:
            raise ValueError("Number of inference steps is 'None', you need to run 'set_timesteps' after creating the scheduler")
        prev_timestep = timestep - self.num_train_timesteps // self.num_inference_steps
        alpha_prod_t = self.alphas_cumprod[timestep]
        alpha_prod_t_prev = self.alphas_cumprod[prev_timestep] if prev_timestep >= 0 else self.final_alpha_cumprod
        beta_prod_t = 1 - alpha_prod_t
        pred_original_sample = (sample - beta_prod_t ** (0.5) * model_output) / alpha_prod_t ** (0.5)
        pred_epsilon = model_output
        if self.thresholding:
            pred_original_sample = self._threshold_sample(pred_original_sample)
        else:
            pred_original_sample = pred_original_sample.clamp(-self.clip_sample_range, self.clip_sample_range)
        variance = self._get_variance(timestep, prev_timestep)
        std_dev_t = eta * variance ** (0.5)
        pred_sample_direction = (1 - alpha_prod_t_prev - std_dev_t**2) ** (0.5) * pred_epsilon
        prev_sample = alpha_prod_t_prev ** (0.5) * pred_original_sample + pred_sample_direction
        if eta > 0:
            variance_noise = torch.randn(model_output.shape, generator=generator)
            prev_sample = prev_sample + std_dev_t * variance_noise
        if not return_dict:
            return (prev_sample, pred_original_sample)
        return DDIMSchedulerOutput(prev_sample=prev_sample, pred_original_sample=pred_original_sample)


class TinyUNet2D(nn.Module):
    def __init__(self, channels: int = 4, hidden: int = 16):
        super().__init__()
        self.time_mlp = nn.Sequential(nn.Linear(1, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.conv_in = nn.Linear(channels, hidden)
        self.conv_out = nn.Linear(hidden, channels)

    def forward(self, sample, timestep):
        if not torch.is_tensor(timestep):
            timestep = torch.tensor([timestep], dtype=torch.long, device=sample.device)
        timesteps = timestep * torch.ones(sample.shape[0], dtype=timestep.dtype, device=timestep.device)
        emb = self.time_mlp(timesteps.float()[:, None] / 1000.0)
        h = self.conv_in(sample.permute(0, 2, 3, 1)) + emb[:, None, None, :]
        return self.conv_out(torch.nn.functional.silu(h)).permute(0, 3, 1, 2)


def build():
    return TinyUNet2D().eval()


def inputs(batch: int):
    return (torch.randn(batch, 4, 4, 4), torch.tensor(500))


def sample_loop(model, batch: int = 2, steps: int = 4):
    """How a pipeline uses both: the scheduler runs eagerly around the (compiled) model."""
    scheduler = DDIMScheduler()
    scheduler.set_timesteps(steps)
    sample = torch.randn(batch, 4, 4, 4)
    for t in scheduler.timesteps:
        noise_pred = model(sample, t)
        sample = scheduler.step(noise_pred, int(t), sample).prev_sample
    return sample
