"""Puts transformers, diffusers and timm (bench/_downloads) on sys.path after the venv's own
packages, as bench/zoo_models.py does; ``timm_shim()`` installs its torchvision import shim.
The user models import this first (it is not a hazard, and no guard points here)."""

import importlib.util
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOWNLOADS = os.path.join(REPO, "bench", "_downloads")
for _p in (os.path.join(DOWNLOADS, "zoo-libs"), os.path.join(DOWNLOADS, "zoo-site")):
    if _p not in sys.path:
        sys.path.append(_p)


def timm_shim():
    """timm imports torchvision, which does not import beside torch 2.13: use the zoo's shim."""
    if "zoo_models" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "zoo_models", os.path.join(REPO, "bench", "zoo_models.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules["zoo_models"] = mod
        spec.loader.exec_module(mod)
    sys.modules["zoo_models"].install_torchvision_shim()


def padded_ids(batch, seq_len, vocab=128, seed=0):
    """Token ids padded to ``seq_len`` with a per-row length (deterministic per shape): row 0 is
    full-length every other batch, so the batch's longest row moves with the shape."""
    import torch

    g = torch.Generator().manual_seed(seed + 1009 * batch + seq_len)
    ids = torch.randint(3, vocab, (batch, seq_len), generator=g)
    lengths = torch.randint(max(1, seq_len // 2), seq_len + 1, (batch,), generator=g)
    mask = (torch.arange(seq_len)[None, :] < lengths[:, None]).long()
    return ids * mask, mask
