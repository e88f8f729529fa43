"""Down/upsampling blocks that warn about the deprecated `scale` argument only when it is passed.

Imitates diffusers/utils/deprecation_utils.py: deprecate (version check, kwarg popping, f-string
warnings, warnings.warn, inspect of the caller frame) and diffusers/models/downsampling.py:
Downsample2D.forward (`if len(args) > 0 or kwargs.get("scale", None) is not None: deprecate(...)`,
`assert hidden_states.shape[1] == self.channels`, the use_conv=False AvgPool path), with the
matching nearest upsampling of diffusers/models/upsampling.py: Upsample2D (interpolate path).
"""
import inspect
import warnings

import torch
import torch.nn.functional as F
from torch import nn

__version__ = "0.42.1"


def _parse(v: str):
    return tuple(int(p) for p in v.split(".")[:3])


def deprecate(*args, take_from=None, standard_warn=True, stacklevel=2):
    deprecated_kwargs = take_from
    values = ()
    if not isinstance(args[0], tuple):
        args = (args,)
    for attribute, version_name, message in args:
        if _parse(__version__) >= _parse(version_name):
            raise ValueError(
                f"The deprecation tuple {(attribute, version_name, message)} should be removed since diffusers'"
                f" version {__version__} is >= {version_name}"
            )
        warning = None
        if isinstance(deprecated_kwargs, dict) and attribute in deprecated_kwargs:
            values += (deprecated_kwargs.pop(attribute),)
            warning = f"The `{attribute}` argument is deprecated and will be removed in version {version_name}."
        elif deprecated_kwargs is None:
            warning = f"`{attribute}` is deprecated and will be removed in version {version_name}."
        if warning is not None:
            warning = warning + " " if standard_warn else ""
            warnings.warn(warning + message, FutureWarning, stacklevel=stacklevel)
    if isinstance(deprecated_kwargs, dict) and len(deprecated_kwargs) > 0:
        call_frame = inspect.getouterframes(inspect.currentframe())[1]
        key, value = next(iter(deprecated_kwargs.items()))
        raise TypeError(f"{call_frame.function} in {call_frame.filename} line {call_frame.lineno - 1} got an unexpected keyword argument `{key}`")
    if len(values) == 0:
        return
    elif len(values) == 1:
        return values[0]
    return values


class Downsample2D(nn.Module):
    def __init__(self, channels: int, use_conv: bool = False, padding: int = 1):
        super().__init__()
        self.channels = channels
        self.use_conv = use_conv
        self.padding = padding
        self.norm = None
        self.conv = nn.AvgPool2d(kernel_size=2, stride=2)

    def forward(self, hidden_states, *args, **kwargs):
        if len(args) > 0 or kwargs.get("scale", None) is not None:
            deprecation_message = "The `scale` argument is deprecated and will be ignored. Please remove it, as passing it will raise an error in the future. `scale` should directly be passed while calling the underlying pipeline component i.e., via `cross_attention_kwargs`."
            deprecate("scale", "1.0.0", deprecation_message)
        assert hidden_states.shape[1] == self.channels
        if self.norm is not None:
            hidden_states = self.norm(hidden_states.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        if self.use_conv and self.padding == 0:
            pad = (0, 1, 0, 1)
            hidden_states = F.pad(hidden_states, pad, mode="constant", value=0)
        assert hidden_states.shape[1] == self.channels
        return self.conv(hidden_states)


class Upsample2D(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.channels = channels

    def forward(self, hidden_states, output_size=None, *args, **kwargs):
        if len(args) > 0 or kwargs.get("scale", None) is not None:
            deprecate("scale", "1.0.0", "The `scale` argument is deprecated and will be ignored.")
        assert hidden_states.shape[1] == self.channels
        if output_size is None:
            return F.interpolate(hidden_states, scale_factor=2.0, mode="nearest")
        return F.interpolate(hidden_states, size=output_size, mode="nearest")


class DownUp(nn.Module):
    def __init__(self, channels: int = 4):
        super().__init__()
        self.proj_in = nn.Linear(channels, channels)
        self.down = Downsample2D(channels)
        self.up = Upsample2D(channels)

    def forward(self, sample):
        h = self.proj_in(sample.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        skip = h
        h = self.down(h)
        h = self.up(h, output_size=skip.shape[-2:])
        return h + skip


def build():
    return DownUp().eval()


def inputs(batch: int):
    return (torch.randn(batch, 4, 8, 8),)
