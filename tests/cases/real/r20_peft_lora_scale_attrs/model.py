"""LoRA strength passed per call and written into the LoRA layers' float `scaling` dicts.

Imitates diffusers/models/unets/unet_2d_condition.py: UNet2DConditionModel.forward
(`lora_scale = cross_attention_kwargs.pop("scale", 1.0)`, scale_lora_layers / unscale_lora_layers
around the body), diffusers/utils/peft_utils.py: scale_lora_layers, unscale_lora_layers,
peft/tuners/lora/layer.py: LoraLayer.scale_layer / unscale_layer, Linear.forward, and the legacy
diffusers/models/lora.py: LoRALinearLayer.forward (`network_alpha / self.rank`) /
LoRACompatibleLinear.forward for the output projection.
"""
import torch
from torch import nn


class LoraLinear(nn.Module):
    def __init__(self, in_features: int, out_features: int, r: int = 4, lora_alpha: int = 8):
        super().__init__()
        self.base_layer = nn.Linear(in_features, out_features)
        self.lora_A = nn.ModuleDict({"default": nn.Linear(in_features, r, bias=False)})
        self.lora_B = nn.ModuleDict({"default": nn.Linear(r, out_features, bias=False)})
        self.r = {"default": r}
        self.lora_alpha = {"default": lora_alpha}
        self.scaling = {"default": lora_alpha / r}
        self.active_adapters = ["default"]

    def scale_layer(self, scale: float) -> None:
        if scale == 1:
            return
        for active_adapter in self.active_adapters:
            if active_adapter not in self.lora_A.keys():
                continue
            self.scaling[active_adapter] *= scale

    def unscale_layer(self, scale=None) -> None:
        for active_adapter in self.active_adapters:
            if active_adapter not in self.lora_A.keys():
                continue
            if scale is None:
                self.scaling[active_adapter] = self.lora_alpha[active_adapter] / self.r[active_adapter]
            else:
                self.scaling[active_adapter] /= scale

    def forward(self, x):
        result = self.base_layer(x)
        for active_adapter in self.active_adapters:
            if active_adapter not in self.lora_A.keys():
                continue
            scaling = self.scaling[active_adapter]
            result = result + self.lora_B[active_adapter](self.lora_A[active_adapter](x)) * scaling
        return result


class LoRALinearLayer(nn.Module):
    def __init__(self, in_features: int, out_features: int, rank: int = 4, network_alpha=None):
        super().__init__()
        self.down = nn.Linear(in_features, rank, bias=False)
        self.up = nn.Linear(rank, out_features, bias=False)
        self.network_alpha = network_alpha
        self.rank = rank

    def forward(self, hidden_states):
        orig_dtype = hidden_states.dtype
        dtype = self.down.weight.dtype
        down_hidden_states = self.down(hidden_states.to(dtype))
        up_hidden_states = self.up(down_hidden_states)
        if self.network_alpha is not None:
            up_hidden_states *= self.network_alpha / self.rank
        return up_hidden_states.to(orig_dtype)


class LoRACompatibleLinear(nn.Linear):
    def __init__(self, *args, lora_layer=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lora_layer = lora_layer

    def forward(self, hidden_states, scale: float = 1.0):
        if self.lora_layer is None:
            return super().forward(hidden_states)
        return super().forward(hidden_states) + (scale * self.lora_layer(hidden_states))


def scale_lora_layers(model, weight):
    if weight == 1.0:
        return
    for module in model.modules():
        if isinstance(module, LoraLinear):
            module.scale_layer(weight)


def unscale_lora_layers(model, weight=None):
    if weight is None or weight == 1.0:
        return
    for module in model.modules():
        if isinstance(module, LoraLinear):
            module.unscale_layer(weight if weight != 0 else None)


class TinyLoraUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj_in = LoraLinear(8, 16)
        self.mid = nn.Sequential(nn.SiLU(), nn.Linear(16, 16))
        self.proj_out = LoRACompatibleLinear(16, 8, lora_layer=LoRALinearLayer(16, 8, rank=4, network_alpha=8))

    def forward(self, sample, cross_attention_kwargs=None):
        if cross_attention_kwargs is not None:
            cross_attention_kwargs = cross_attention_kwargs.copy()
            lora_scale = cross_attention_kwargs.pop("scale", 1.0)
        else:
            lora_scale = 1.0
        scale_lora_layers(self, lora_scale)
        h = self.proj_out(self.mid(self.proj_in(sample)))
        unscale_lora_layers(self, lora_scale)
        return h


def build():
    return TinyLoraUNet().eval()


def inputs(batch: int):
    return (torch.randn(batch, 8), {"scale": 1.0})


EXPERIMENTS = {
    "scale_per_call": "batch fixed at 2; the LoRA strength passed in cross_attention_kwargs changes every call: 0.3, 0.4, 0.5, 0.6, 0.7, 0.8",
    "set_scaling_between_calls": "batch fixed at 2, scale 1.0; before each call the user sets proj_in.scaling['default'] = 0.5 * batch (a float module attribute changed between calls)",
    "set_rank_between_calls": "batch fixed at 2, scale 1.0; before each call the user sets proj_out.lora_layer.rank = 4 + batch (an int module attribute changed between calls)",
}


def experiment_scale_per_call_inputs(batch: int):
    return (torch.randn(2, 8), {"scale": {1: 0.3, 2: 0.4, 3: 0.5, 4: 0.6, 8: 0.7, 17: 0.8}[batch]})


def experiment_set_scaling_between_calls_inputs(batch: int):
    return (torch.randn(2, 8), {"scale": 1.0})


def experiment_set_scaling_between_calls_prepare(model, batch: int):
    model.proj_in.scaling["default"] = 0.5 * batch


def experiment_set_rank_between_calls_inputs(batch: int):
    return (torch.randn(2, 8), {"scale": 1.0})


def experiment_set_rank_between_calls_prepare(model, batch: int):
    model.proj_out.lora_layer.rank = 4 + batch
