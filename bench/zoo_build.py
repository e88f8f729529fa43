"""The zoo's models, built mechanically: no model is picked or configured by hand.

    python bench/zoo_build.py list [--lib transformers]     # the catalogue, one name a line
    python bench/zoo_build.py probe NAME... [-o plans.jsonl] # build + eager probe (no compile)

**The catalogue** (``catalogue()``), from the pinned libraries themselves:

- ``hf_<model_type>``: every key of transformers' ``MODEL_MAPPING_NAMES`` (the base model of
  each architecture: ``AutoModel``'s table).
- ``timm_<module>``: every module of ``timm.list_modules()`` (a model family), one model each:
  the one with the fewest parameters (counted on the ``meta`` device, ties by name).
- ``diffusers_<Class>``: every class diffusers exports from ``diffusers.models`` whose module
  sits under ``unets``, ``transformers``, ``autoencoders`` or ``controlnets``.
- ``tv_<builder>``: every builder of ``torchvision.models.list_models()`` (see ``_torchvision``).
- ``hf_<model_type>__<variant>``: the same base model with one setting the library's default
  never runs (``HF_VARIANTS``; ``experts_eager``: the per-expert loop, not ``grouped_mm``;
  ``grid_images``: a vision-language model given patches, their grid and its media tokens;
  ``audio_tokens``: an audio-language model given mel features and its audio tokens;
  ``global_attention``: Longformer-style global attention on the first token;
  ``half``: the model and its inputs in float16;
  ``seqcls_labels``: the sequence-classification head, with labels).

**Tiny configs** (``shrink``): the architecture's default config (``ConfigClass()``, or the
defaults of a diffusers ``__init__``), every field renamed by one table of name patterns
(``SHRINK``): layer counts to 2, widths to 32, heads to 4 (key/value heads 2), head dims to 8,
feed-forward widths to 64, experts to 4 (2 per token), vocabularies to 128, per-stage lists
(``depths``, ``hidden_sizes``, ``num_heads``) kept in length and shrunk per stage, per-layer
lists (``layer_types``) cut to the new layer count, special token ids that no longer fit the
vocabulary moved to 0-3, image sizes to 4 patches a side (at least 32 px); sub-configs
(``text_config``, ``vision_config``) the same way. Nothing else changes: attention
implementation, caches, dtypes are the library's defaults. timm models are the smallest of
their family, made with ``img_size=64`` where their class takes it (else as published);
diffusers classes are shrunk by the same table; torchvision's are as published, with random
weights (backbones included).

**Inputs** come from the forward's signature and the config (``Recipe``): ``input_ids``
(random ids 4..vocab-1) with ``attention_mask`` (ones), ``token_type_ids`` (zeros) and
``decoder_input_ids`` (half the length plus one) where the signature names them;
``pixel_values`` (``num_channels`` x side x side); ``input_values`` (raw audio samples);
``input_features`` (``num_mel_bins`` x frames); diffusers' ``sample``/``hidden_states``,
``timestep``, ``encoder_hidden_states``, ``pooled_projections``, ... Which of them a model
gets is decided by the probe: every kind the signature names first, then each kind alone, in
a fixed order; the first set an eager forward accepts wins (a vision-language model that
rejects an image without image tokens runs its text path). Kinds only a few families take
are tried after those (``ExtraKind``): a codec decoder's ``latents``, a Qwen-VL-style vision
tower's patch rows with their ``grid_thw``.

**Sizes and order** (``plan``): each kind has candidate sizes (text 64, 33, 16, 9, 5 tokens;
sides 2x, 1.5x and 1x the config's image size; timm 64, 48, 32 px; 3200, 1600, 800 audio
samples; ...). The probe keeps the sizes an eager forward at batch 2 accepts (the other kinds
at their base size; the base alone when none runs),
then zips the kinds' kept sizes into *levels*, largest first. The replay calls the levels in
that order, largest first, and within a level the batch sizes 1, 2, 3, 4, 8, 16: no first
call takes a path that a shorter input switches off for good (BigBird's block-sparse
attention at 64 tokens runs before 9 tokens makes it set ``original_full``). The harness
nests batch sizes outside lengths, so the zoo hands it one "length" per (level, batch) (the
index into the plan), with batch size 1, and ``inputs`` maps the index back.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.abc
import importlib.util
import inspect
import json
import os
import re
import signal
import sys
import time
import traceback
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

#: bench/ (a sweep runs a snapshot of this file from elsewhere: it says where bench/ is)
HERE = os.environ.get("SHAPELINT_ZOO_BENCH") or os.path.dirname(os.path.abspath(__file__))
DOWNLOADS = os.path.join(HERE, "_downloads")
LIBS = os.path.join(DOWNLOADS, "zoo-libs")  # transformers, diffusers, timm (pinned, no deps)
SITE = os.path.join(DOWNLOADS, "zoo-site")  # their runtime dependencies (never torch)
PLANS = os.path.join(DOWNLOADS, "zoo-plans")  # the probe's plan per model (the replay reads it)

for _p in (LIBS, SITE):  # after the venv: the venv's torch, sympy, typing_extensions win
    if _p not in sys.path:
        sys.path.append(_p)

#: bump when a change here changes what an existing model replays (its record is replayed)
BUILDER_VERSION = 1
BATCHES = [1, 2, 3, 4, 8, 16]
PROBE_BATCH = 2
VOCAB = 128
TEXT_SIZES = [64, 33, 16, 9, 5]
AUDIO_SIZES = [3200, 1600, 800]
FEATURE_SIZES = [64, 32, 16]
LATENT_FRAMES = [16, 8, 4]
LIB_PREFIX = {"hf": "transformers", "timm": "timm", "diffusers": "diffusers", "tv": "torchvision"}


# -- tiny configs ---------------------------------------------------------------------------------
def _rx(*names: str) -> "re.Pattern[str]":
    return re.compile(r"^(?:.*_)?(?:" + "|".join(names) + r")$")


#: a model's widths (its channels): shrunk to 32
WIDTH = _rx("hidden_size", "d_model", "n_embd", "dim", "embed_dim", "embedding_size", "emb_dim",
            "d_embed", "word_embed_proj_dim", "projection_dim", "hidden_dim", "proj_dim",
            "embedding_dim", "width")


#: (pattern on the field name, what an int becomes (never larger), what each int of a list
#: becomes given its index, or None to leave lists alone). First match wins.
SHRINK: List[Tuple["re.Pattern[str]", Optional[int], Optional[Callable[[int, int], int]]]] = [
    (re.compile(r"^(first_k_dense_replace|n_shared_experts|num_shared_experts|n_group|topk_group)$"), 1, None),
    (_rx("rotary_dim", "rotary_emb_dim", "rope_dim"), 4, None),
    (_rx("head_dim", "d_kv", "kv_channels", "attention_head_dim", "head_size", "d_head",
         "dim_head", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "qk_head_dim"), 8,
     lambda i, v: min(v, 8)),
    (_rx("kv_lora_rank", "q_lora_rank"), 16, None),
    (_rx("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num",
         "num_query_groups", "n_kv_heads", "num_key_value_groups"), 2, None),
    (_rx("num_attention_heads", "n_head", "num_heads", "n_heads", "attention_heads",
         "num_attn_heads", "attn_heads", "heads"), 4, lambda i, v: min(v, 2)),
    (_rx("num_experts_per_tok", "num_experts_per_token", "moe_topk", "top_k", "moe_k",
         "num_selected_experts"), 2, None),
    (_rx("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts",
         "num_routed_experts"), 4, None),
    (_rx("intermediate_size", "ffn_dim", "d_ff", "n_inner", "ffn_hidden_size", "mlp_dim",
         "inner_dim", "dim_feedforward", "intermediate_dim", "d_inner", "feed_forward_size",
         "ff_dim", "ffn_size", "dim_ff"), 64, lambda i, v: min(v, 64)),
    (WIDTH, 32, None),
    (_rx("hidden_sizes", "embed_dims", "dims", "conv_dim", "widths", "channels_list",
         "num_channels_list", "neck_hidden_sizes", "block_out_channels", "out_channels_list",
         "stage_channels"), None, lambda i, v: min(v, 16 * (i + 1))),
    (_rx("depths", "depth", "layers_per_block", "num_layers_per_block", "blocks_per_stage",
         "stage_depths"), 2, lambda i, v: min(v, 1)),
    (_rx("num_hidden_layers", "num_layers", "n_layer", "n_layers", "num_blocks", "layers",
         "encoder_layers", "decoder_layers", "num_encoder_layers", "num_decoder_layers",
         "max_window_layers", "num_single_layers"), 2, None),
    (_rx("vocab_size"), VOCAB, None),
    (_rx("block_size"), 4, None),
    (_rx("num_random_blocks"), 2, None),
    (_rx("sliding_window", "attention_window", "local_attention", "local_window"), 8,
     lambda i, v: min(v, 8)),
    (_rx("window_size"), 4, lambda i, v: min(v, 4)),
    (_rx("max_source_positions"), 32, None),
    (_rx("num_groups", "norm_num_groups", "resnet_groups"), 8, None),
]
#: no downloads: a backbone is built from its config, with random weights, by transformers
#: itself where the config lets it choose (a model that only has a timm backbone builds it
#: through timm, beside the torchvision shim: see ``build_hf``)
SET_FIELDS = {"use_pretrained_backbone": False, "use_timm_backbone": False}
#: fields that name stages or layers of the full-size model (a backbone's ``out_features =
#: ["stage12"]``): dropped, so the library's default (the last stage) applies
DROP_FIELDS = {"out_features", "out_indices"}
#: special tokens moved into the small vocabulary when they no longer fit it
TOKEN_IDS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "decoder_start_token_id": 1,
             "sep_token_id": 2, "cls_token_id": 1, "unk_token_id": 3, "mask_token_id": 3}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def shrink(d: Dict[str, Any], depthwise: bool = False, fill_unset: bool = False) -> Dict[str, Any]:
    """A config dict, made tiny by the name table ``SHRINK`` (recursively into sub-configs);
    ``depthwise``: groups counts follow the widths they equalled (see ``_keep_invariants``);
    ``fill_unset``: sizes a checkpoint always sets get a value where the default is None
    (see ``_fill_unset``)."""
    out: Dict[str, Any] = {}
    old_layers = d.get("num_hidden_layers") if _is_int(d.get("num_hidden_layers")) else None
    for k, v in d.items():
        if k in DROP_FIELDS:
            continue
        if k in SET_FIELDS and isinstance(v, bool):
            out[k] = SET_FIELDS[k]
            continue
        if isinstance(v, dict) and "model_type" in v:
            out[k] = shrink(v, depthwise, fill_unset)
            continue
        out[k] = v
        for pattern, to_int, to_item in SHRINK:
            if not pattern.match(k):
                continue
            if _is_int(v) and to_int is not None:
                out[k] = min(v, to_int) if v > 0 else v
            elif isinstance(v, (list, tuple)) and v and all(_is_int(x) for x in v) and to_item:
                out[k] = type(v)(to_item(i, x) for i, x in enumerate(v))
            break
    lengths = {len(v) for v in d.values() if isinstance(v, (list, tuple))}
    for k, v in d.items():  # a count that sizes a list of the config stays (conv layers)
        if k != "num_hidden_layers" and _is_int(v) and out.get(k) != v and v in lengths:
            out[k] = v
    _keep_invariants(d, out, depthwise)
    if fill_unset:
        _fill_unset(out)
    new_layers = out.get("num_hidden_layers")
    if old_layers and _is_int(new_layers) and new_layers < old_layers:
        # per-layer lists (``layer_types``) and per-layer overrides keep one layer of each kind
        # (first appearances, at most 4 layers), then the first layers up to the new count
        per_layer = {k: v for k, v in out.items() if isinstance(v, (list, tuple))
                     and len(v) == old_layers and k != "num_hidden_layers"}
        primary = per_layer.get("layer_types") or next(iter(per_layer.values()), None)
        keep: List[int] = []
        if primary is not None:
            seen: List[str] = []
            for i, x in enumerate(primary):
                key = json.dumps(x, sort_keys=True, default=str)
                if key not in seen and len(keep) < 4:
                    seen.append(key)
                    keep.append(i)
        for i in range(old_layers):
            if len(keep) >= new_layers:
                break
            if i not in keep:
                keep.append(i)
        keep.sort()
        if len(keep) > new_layers:
            out["num_hidden_layers"] = len(keep)
        for k, v in per_layer.items():
            out[k] = type(v)(v[i] for i in keep)
        for k, v in list(out.items()):
            if isinstance(v, dict) and v and all(str(x).isdigit() for x in v):
                out[k] = {type(x)(keep.index(int(x))) if isinstance(x, int) else str(keep.index(int(x))): y
                          for x, y in v.items() if int(x) in keep}
    _keep_layer_kinds(out)
    vocab = out.get("vocab_size")
    if _is_int(vocab):
        for k, small in TOKEN_IDS.items():
            v = out.get(k)
            if _is_int(v) and v >= vocab:
                out[k] = small
            elif isinstance(v, list) and any(_is_int(x) and x >= vocab for x in v):
                out[k] = [small]
    ps = out.get("patch_size")
    if _is_int(out.get("image_size")):
        patch = ps if _is_int(ps) else (ps[0] if isinstance(ps, (list, tuple)) and ps and _is_int(ps[0]) else 8)
        out["image_size"] = min(out["image_size"], max(32, 4 * patch))
    return out


def _keep_layer_kinds(out: Dict[str, Any]) -> None:
    """Layer kinds set by a rule rather than a per-layer list keep every kind within the new
    layer count, as per-layer lists do: an offset into a period (Jamba's attention every 8th
    layer from the 4th) moves to the last layer, and a cycle of kinds (RecurrentGemma's
    recurrent, recurrent, attention) keeps the layers up to each kind's first (at most 4).
    Cut to 2 layers, such a model has no attention layer, and its cache refuses the forward."""
    n = out.get("num_hidden_layers")
    if not _is_int(n) or n < 1:
        return
    for k, v in list(out.items()):
        period = k[:-len("offset")] + "period"
        if k.endswith("_layer_offset") and _is_int(v) and v >= n and _is_int(out.get(period)):
            out[k], out[period] = n - 1, n
    cycle = out.get("block_types")
    if isinstance(cycle, (list, tuple)) and cycle and all(isinstance(x, str) for x in cycle):
        need = max(list(cycle).index(kind) for kind in set(cycle)) + 1
        if n < need <= 4:
            out["num_hidden_layers"] = need


KV_HEADS = ("num_key_value_heads", "num_kv_heads", "n_head_kv", "n_kv_heads")
HEADS = ("num_attention_heads", "n_head", "num_heads", "n_heads")
#: expert counts a checkpoint sets where the architecture's default leaves None
EXPERTS = ("num_experts", "num_local_experts", "n_routed_experts")


def _fill_unset(out: Dict[str, Any]) -> None:
    """Sizes every checkpoint of the architecture sets, left None by its default config (the
    model then fails to build: ``head_dim ** -0.5``, ``nn.Embedding(None, ...)``): the values
    transformers' own conventions give them, at the tiny widths (a head's width is the hidden
    size over the heads, key/value heads default to the heads). Tried only where the plain
    shrunk config does not build (``build_hf``), so no model that builds changes."""
    heads = next((out[k] for k in HEADS if _is_int(out.get(k))), None)
    width = next((out[k] for k in ("hidden_size", "d_model", "n_embd") if _is_int(out.get(k))),
                 None)
    for k in KV_HEADS:
        if k in out and out[k] is None and heads:
            out[k] = heads
    if "head_dim" in out and out["head_dim"] is None and heads and width:
        out["head_dim"] = width // heads
    if "vocab_size" in out and out["vocab_size"] is None:
        out["vocab_size"] = VOCAB
        if "pad_token_id" in out and out["pad_token_id"] is None:  # ESM masks padding by it
            out["pad_token_id"] = TOKEN_IDS["pad_token_id"]
    vocab = out.get("vocab_size")
    for k, v in list(out.items()):  # a CTC head's `blank_token_id` must be a class it has
        if k.endswith("_token_id") and _is_int(v) and _is_int(vocab) and v >= vocab:
            out[k] = TOKEN_IDS.get(k, 3)
    for k in EXPERTS:
        if k in out and out[k] is None:
            out[k] = 4


def _keep_invariants(old: Dict[str, Any], out: Dict[str, Any], depthwise: bool = False) -> None:
    """Relations the library checks or assumes between fields, kept after shrinking: key/value
    heads keep their ratio to the heads (a model without grouped attention keeps as many), an
    SSM's heads times head dim stay its expanded width, a multimodal rotary split
    (``mrope_section``) is rescaled to the new head dim, a vocoder keeps its acoustic model's
    mel bins; with ``depthwise``, groups counts follow their widths (asked for only where a
    build refuses the plain shrink, so configs that build keep their records)."""
    heads = next((h for h in HEADS if _is_int(old.get(h)) and _is_int(out.get(h))), None)
    if heads:
        for kv in KV_HEADS:
            if _is_int(old.get(kv)) and old[heads] > 0:
                want = max(1, out[heads] * old[kv] // old[heads])
                while out[heads] % want:
                    want -= 1
                out[kv] = want
    if all(_is_int(out.get(k)) for k in ("mamba_expand", "hidden_size", "mamba_d_head")) \
            and _is_int(out.get("mamba_n_heads")):
        out["mamba_n_heads"] = max(1, out["mamba_expand"] * out["hidden_size"] // out["mamba_d_head"])
    _keep_single_dims(old, out)
    if depthwise:
        _keep_depthwise_groups(old, out)
    _keep_vocoder_input(old, out)
    _keep_window_merge(out)
    rope = out.get("rope_parameters") or out.get("rope_scaling")
    if isinstance(rope, dict) and isinstance(rope.get("mrope_section"), list):
        hd = out.get("head_dim") if _is_int(out.get("head_dim")) else None
        if hd is None and _is_int(out.get("hidden_size")) and heads:
            hd = out["hidden_size"] // out[heads]
        sec = rope["mrope_section"]
        if hd and sum(sec) != hd // 2 and all(_is_int(x) for x in sec):
            half, total = hd // 2, sum(sec)
            new = [max(1, x * half // total) for x in sec]
            new[0] += half - sum(new)
            if new[0] >= 1:
                rope = dict(rope, mrope_section=new)
                out["rope_parameters" if "rope_parameters" in out else "rope_scaling"] = rope


def _keep_window_merge(out: Dict[str, Any]) -> None:
    """A window measured in pixels (Qwen2.5-VL's ``window_size``, 112) holds whole merged
    patches: the model divides by ``window_size // spatial_merge_size // patch_size``, which
    the window row's shrink to 4 made 0 (``integer modulo by zero``). It keeps two of them."""
    window, merge, patch = (out.get(k) for k in ("window_size", "spatial_merge_size", "patch_size"))
    if _is_int(window) and _is_int(merge) and _is_int(patch) and merge > 0 and patch > 0 \
            and window // merge // patch == 0:
        out["window_size"] = 2 * merge * patch


GROUPS = re.compile(r"^(?:.*_)?groups$")
SINGLE_DIMS = _rx("dims")


def _keep_single_dims(old: Dict[str, Any], out: Dict[str, Any]) -> None:
    """A single width named like a per-stage list (Gemma 4's ``output_proj_dims``, which
    ``SHRINK``'s list row leaves alone) that equalled a width the shrink changed follows it:
    the layer it sizes takes that width's output."""
    for f, v in old.items():
        if SINGLE_DIMS.match(f) and _is_int(v) and out.get(f) == v:
            width = next((w for w, x in old.items() if WIDTH.match(w) and x == v
                          and _is_int(out.get(w)) and out[w] != x), None)
            if width is not None:
                out[f] = out[width]


def _keep_depthwise_groups(old: Dict[str, Any], out: Dict[str, Any]) -> None:
    """A convolution's groups count that equalled a width (a depthwise convolution over it,
    PocketTTS's ``upsample_groups == hidden_size``) follows that width down: channels must
    stay divisible by the groups."""
    for g, v in old.items():
        if not (GROUPS.match(g) and _is_int(v) and out.get(g) == v):
            continue
        width = next((w for w, x in old.items() if WIDTH.match(w) and x == v and _is_int(out.get(w))
                      and out[w] != x), None)
        if width is not None:
            out[g] = out[width]


MEL_BINS = ("num_mel_bins", "n_mels", "mel_bins")
INPUT_WIDTH = _rx("in_dim", "in_channels", "input_dim", "in_chans")


def _keep_vocoder_input(old: Dict[str, Any], out: Dict[str, Any]) -> None:
    """A composite text-to-speech config whose vocoder takes the spectrogram its acoustic
    model makes (FastSpeech2 + HiFi-GAN: ``model_in_dim == num_mel_bins``): a sub-config's
    input width that equalled a sibling's mel bins keeps them (shrink leaves mel bins alone)."""
    subs = [k for k, v in old.items() if isinstance(v, dict) and "model_type" in v
            and isinstance(out.get(k), dict)]
    for k in subs:
        mels = next((out[k][m] for m in MEL_BINS if _is_int(out[k].get(m))), None)
        if mels is None:
            continue
        for other in subs:
            if other == k:
                continue
            for f, v in old[other].items():
                if INPUT_WIDTH.match(f) and v == mels and out[other].get(f) != v:
                    out[other][f] = v


# -- inputs ---------------------------------------------------------------------------------------
def _find(cfg: Any, *names: str, default: Any = None) -> Any:
    """A field of the config or of its sub-configs (the first found, breadth first)."""
    todo = [cfg]
    while todo:
        c = todo.pop(0)
        for n in names:
            v = getattr(c, n, None) if not isinstance(c, dict) else c.get(n)
            if v is not None:
                return v
        kids = c.values() if isinstance(c, dict) else [getattr(c, k, None) for k in
                                                       (getattr(c, "sub_configs", None) or {})]
        todo.extend(x for x in kids if x is not None and not isinstance(x, (int, float, str, list)))
    return default


def _sizes(base: int, candidates: List[int]) -> List[int]:
    return sorted(set(candidates) | {base}, reverse=True)


class Recipe:
    """How to make a model's inputs: ``kinds`` -> candidate sizes, and ``make(batch, sizes)``
    returning (args, kwargs). ``options`` lists the kind sets the probe tries, in order."""

    def __init__(self, kinds: Dict[str, List[int]], base: Dict[str, int],
                 make: Callable[[int, Dict[str, int], List[str]], Tuple[tuple, dict]],
                 options: List[List[str]]) -> None:
        self.kinds, self.base, self.make, self.options = kinds, base, make, options


def _ids(batch: int, n: int, vocab: int):
    import torch

    return torch.randint(4, max(5, min(vocab, VOCAB)), (batch, n))


def hf_recipe(model: Any) -> Recipe:
    import torch

    cfg = model.config
    params = inspect.signature(model.forward).parameters
    named = set(params)
    vocab = _find(cfg, "vocab_size", default=VOCAB)
    vocab = vocab if _is_int(vocab) else VOCAB
    kinds: Dict[str, List[int]] = {}
    base: Dict[str, int] = {}
    if "input_ids" in named:
        kinds["text"], base["text"] = list(TEXT_SIZES), 16
    if "decoder_input_ids" in named and "input_ids" not in named:  # a speech/vision decoder
        kinds["decoder"], base["decoder"] = list(TEXT_SIZES), 16
    if "pixel_values" in named:
        side = _find(cfg, "image_size", default=32)
        side = side[0] if isinstance(side, (list, tuple)) else side
        side = side if _is_int(side) else 32
        kinds["image"], base["image"] = _sizes(side, [2 * side, side + side // 2]), side
    if "input_values" in named:
        kinds["values"], base["values"] = list(AUDIO_SIZES), 1600
    if "input_features" in named:
        src = _find(cfg, "max_source_positions")
        frames = list(FEATURE_SIZES) + ([2 * src] if _is_int(src) and src <= 64 else [])
        kinds["features"] = sorted(set(frames), reverse=True)
        base["features"] = 2 * src if _is_int(src) and src <= 64 else 32  # an encoder's exact length
    channels = _find(cfg, "num_channels", default=3)
    channels = channels if _is_int(channels) else 3
    mels = _find(cfg, "feature_projection_input_dim", "num_mel_bins", "feature_size",
                 "input_feat_per_channel", default=80)  # (w2v-BERT projects its input first)
    mels = mels if _is_int(mels) else 80
    frames = _find(cfg, "num_frames", default=4)
    frames = frames if _is_int(frames) and 0 < frames <= 32 else 4

    def make(batch: int, sizes: Dict[str, int], use: List[str]):
        kw: Dict[str, Any] = {}
        if "text" in use:
            n = sizes["text"]
            kw["input_ids"] = _ids(batch, n, vocab)
            if "attention_mask" in named:
                kw["attention_mask"] = torch.ones(batch, n, dtype=torch.long)
            if "token_type_ids" in named:
                kw["token_type_ids"] = torch.zeros(batch, n, dtype=torch.long)
            if "decoder_input_ids" in named:
                kw["decoder_input_ids"] = _ids(batch, max(2, n // 2 + 1), vocab)
        if "decoder" in use:
            kw["decoder_input_ids"] = _ids(batch, sizes["decoder"], vocab)
        if "image" in use:  # (batch, channels, side, side); a video model's frames first
            s = sizes["image"]
            kw["pixel_values"] = torch.randn(batch, frames, channels, s, s) if "video" in use \
                else torch.randn(batch, channels, s, s)
        if "values" in use:  # raw audio: (batch, samples), or (batch, 1, samples) for codecs
            shape = (batch, 1, sizes["values"]) if "mono" in use else (batch, sizes["values"])
            kw["input_values"] = torch.randn(*shape)
        if "features" in use:  # (batch, mel bins, frames), or (batch, frames, mel bins)
            n = sizes["features"]
            kw["input_features"] = torch.randn(*((batch, n, mels) if "frames-first" in use
                                                 else (batch, mels, n)))
        return (), kw

    options = [list(kinds)] + [[k] for k in kinds] if len(kinds) > 1 else [list(kinds)]
    # the other layout of audio inputs, tried after the usual one
    options += [o + ["mono"] for o in options if "values" in o]
    options += [o + ["frames-first"] for o in options if "features" in o]
    options += [o + ["video"] for o in options if "image" in o]  # VideoMAE, ViViT, TimeSformer
    options = [o for o in options if o]
    # inputs no kind above makes, tried last (so a model another set runs keeps it)
    extra = [_latents_kind(model, named), _grid_tower_kind(model, named)]
    for kind in filter(None, extra):
        kinds[kind.name], base[kind.name] = kind.sizes, kind.base
        options += kind.options
    rec = Recipe(kinds, base, make, options)
    if any(extra):
        rec.make = _with_extra_kinds(make, [k for k in extra if k])
    return rec


class ExtraKind(NamedTuple):
    """An input kind a few families take, added to the plain recipe after its usual sets:
    its sizes, the option sets that use it and ``make(batch, size, use) -> kwargs``."""

    name: str
    sizes: List[int]
    base: int
    options: List[List[str]]
    make: Callable[[int, int, List[str]], Dict[str, Any]]


def _with_extra_kinds(make: Callable[[int, Dict[str, int], List[str]], Tuple[tuple, dict]],
                      extra: List[ExtraKind]):
    """The plain ``make``, plus the keyword inputs of each extra kind the option set uses."""

    def both(batch: int, sizes: Dict[str, int], use: List[str]):
        args, kw = make(batch, sizes, use)
        for kind in extra:
            if kind.name in use:
                kw.update(kind.make(batch, sizes[kind.name], use))
        return args, kw

    return both


def _latents_kind(model: Any, named: set) -> Optional[ExtraKind]:
    """An audio codec's decoder (Mimi's, PocketTTS's) takes continuous ``latents`` of shape
    (batch, hidden_size, frames), as its codec's ``decode`` hands them over."""
    import torch

    width = getattr(model.config, "hidden_size", None)
    if "latents" not in named or not _is_int(width):
        return None
    return ExtraKind("latents", list(LATENT_FRAMES), 8, [["latents"]],
                     lambda batch, n, use: {"latents": torch.randn(batch, width, n)})


def _patch_geometry(vision: Any) -> Tuple[int, int, int, int]:
    """A Qwen-VL-style vision config's (spatial merge, channels, temporal patch, patch side):
    a processor's patch row holds channels x temporal x patch x patch values."""
    merge = getattr(vision, "spatial_merge_size", None) or 2
    channels = next((c for c in (getattr(vision, k, None) for k in
                                 ("in_channels", "in_chans", "num_channels")) if _is_int(c)), 3)
    return merge, channels, getattr(vision, "temporal_patch_size", None) or 1, vision.patch_size


def _patch_rows(n: int, vision: Any, use: List[str]):
    """``n`` patch rows as a Qwen-VL processor flattens them, or with ``patch-planes`` as
    (patches, channels, patch, patch) planes (PaddleOCR-VL's embedding convolves them)."""
    import torch

    _, channels, temporal, patch = _patch_geometry(vision)
    if "patch-planes" in use:
        return torch.randn(n, channels, patch, patch)
    return torch.randn(n, channels * temporal * patch ** 2)


def _grid_tower_kind(model: Any, named: set) -> Optional[ExtraKind]:
    """A Qwen-VL-style vision tower on its own takes its pictures' patch rows (as
    ``hidden_states`` or ``pixel_values``) with their ``grid_thw``: one picture per sample,
    ``side`` patches a side (a multiple of the spatial merge), so the rows grow with the
    batch and the side."""
    import torch

    cfg = model.config
    name = next((n for n in ("pixel_values", "hidden_states") if n in named), None)
    if "grid_thw" not in named or name is None or not _is_int(getattr(cfg, "patch_size", None)):
        return None
    merge, _, temporal, _ = _patch_geometry(cfg)

    def make(batch: int, side: int, use: List[str]) -> Dict[str, Any]:
        return {name: _patch_rows(batch * side * side, cfg, use),
                "grid_thw": torch.tensor([[1, side, side]] * batch)}

    options = [["grid"]] + ([["grid", "patch-planes"]] if temporal == 1 else [])
    return ExtraKind("grid", _sizes(2 * merge, [4 * merge, 3 * merge]), 2 * merge, options, make)


def _text_config(cfg: Any) -> Any:
    """A multimodal config's text config (its vocabulary), else the config itself."""
    return getattr(cfg, "text_config", None) or cfg


def _set_token_ids(cfg: Any, ids: Dict[str, int]) -> None:
    """Set each special token id of ``ids`` (name -> id) that the config or its text config
    has: the published ids lie past the shrunk vocabulary."""
    for c in (cfg, _text_config(cfg)):
        for key, value in ids.items():
            if hasattr(c, key):
                setattr(c, key, value)


def _media_token_ids(cfg: Any) -> None:
    """Image and video tokens: the shrunk vocabulary's last two ids."""
    vocab = _text_config(cfg).vocab_size
    _set_token_ids(cfg, {"image_token_id": vocab - 1, "image_token_index": vocab - 1,
                         "video_token_id": vocab - 2})


def grid_recipe(model: Any, plain: Recipe) -> Recipe:
    """Inputs as a Qwen-VL-style processor makes them: each picture ``2 x merge`` patches a
    side, flattened to (patches, channels x temporal x patch x patch) rows with its
    ``image_grid_thw`` row, its ``side**2 / merge**2`` image tokens in the text (and
    ``mm_token_type_ids`` marking them); a video is two temporal patches of such frames.
    One picture (and video) per sample, so the patch rows grow with the batch."""
    import torch

    cfg = model.config
    vision = cfg.vision_config
    vocab = _text_config(cfg).vocab_size
    merge, _, temporal, _ = _patch_geometry(vision)
    side = 2 * merge
    per_image = side * side // merge ** 2
    named = set(inspect.signature(model.forward).parameters)

    def make(batch: int, sizes: Dict[str, int], use: List[str]):
        args, kw = plain.make(batch, sizes, ["text"])
        ids = kw["input_ids"]
        ids[ids >= vocab - 2] = 4  # no stray media token
        types = torch.zeros_like(ids)
        ids[:, 1:1 + per_image], types[:, 1:1 + per_image] = vocab - 1, 1
        kw["pixel_values"] = _patch_rows(batch * side * side, vision, use)
        kw["image_grid_thw"] = torch.tensor([[1, side, side]] * batch)
        if "grid-video" in use:
            start, n = 2 + per_image, 2 * per_image
            ids[:, start:start + n], types[:, start:start + n] = vocab - 2, 2
            kw["pixel_values_videos"] = _patch_rows(batch * 2 * side * side, vision, use)
            kw["video_grid_thw"] = torch.tensor([[2, side, side]] * batch)
        if "mm_token_type_ids" in named:
            kw["mm_token_type_ids"] = types
        return args, kw

    room = 3 * per_image + 2  # the media tokens and a text token between them
    kinds = {"text": [n for n in plain.kinds.get("text", []) if n >= room]}
    options = [["text", "grid-video"], ["text"]] if "video_grid_thw" in named else [["text"]]
    if temporal == 1:  # the same patches as planes, where the flat rows fail
        options += [o + ["patch-planes"] for o in options]
    return Recipe(kinds, {"text": max(16, room)}, make, options)


def _audio_token_id(cfg: Any) -> None:
    """The audio token: the shrunk vocabulary's last id."""
    vocab = _text_config(cfg).vocab_size
    _set_token_ids(cfg, {"audio_token_id": vocab - 1, "audio_token_index": vocab - 1})


def _count_rows(out: Any) -> int:
    """Rows of embeddings an encoder returned: a (items, tokens, dim) or (rows, dim) tensor,
    a list of them, or a model output holding one (its ``pooler_output``, else its first)."""
    import torch

    if not isinstance(out, (torch.Tensor, list, tuple)):
        pooled = getattr(out, "pooler_output", None)
        out = pooled if pooled is not None else out[0]
    if isinstance(out, (list, tuple)):
        return sum(_count_rows(o) for o in out)
    return out.shape[0] * out.shape[1] if out.dim() == 3 else out.shape[0]


def audio_recipe(model: Any, plain: Recipe) -> Recipe:
    """The plain text and mel features, the text holding one audio token for each row of
    audio embeddings the model's own ``get_audio_features`` makes of a sample's features
    (counted eagerly, per shape, as a processor counts them), with the masks it takes."""
    import torch

    cfg = model.config
    vocab = _text_config(cfg).vocab_size
    named = set(inspect.signature(model.forward).parameters)
    takes = set(inspect.signature(model.get_audio_features).parameters)
    width = _find(getattr(cfg, "audio_config", None) or cfg, "audio_embed_dim")

    def make(batch: int, sizes: Dict[str, int], use: List[str]):
        args, kw = plain.make(batch, sizes, use)
        if "embed-width" in use:  # raw waveform frames, each ``audio_embed_dim`` samples wide
            kw["input_features"] = torch.randn(batch, sizes["features"], width)
        features = kw["input_features"]
        frames = features.shape[1] if "frames-first" in use else features.shape[-1]
        for name in takes:
            if name.endswith("mask") and name not in kw:
                kw[name] = torch.ones(batch, frames, dtype=torch.bool if "bool-mask" in use
                                      else torch.long)
        try:
            with torch.no_grad():
                out = model.get_audio_features(features, **{k: kw[k] for k in takes
                                                             if k in kw and k != "input_features"})
            rows = _count_rows(out)
        except Exception:  # noqa: BLE001 - features the encoder refuses: so will the forward
            rows = 0
        ids = kw["input_ids"]
        ids[ids >= vocab - 1] = 4  # no stray audio token
        # a text too short for them holds fewer: the model refuses it and the probe drops it
        ids[:, 1:1 + min(rows // batch, ids.shape[1] - 2)] = vocab - 1
        return args, {k: v for k, v in kw.items() if k in named}

    options = [o for o in plain.options if "text" in o and "features" in o]
    # then without the picture: a model built without its optional vision (Gemma 4's) runs
    # its audio merge on text and features alone
    options += [k for k in dict.fromkeys(tuple(x for x in o if x not in ("image", "video"))
                                         for o in options if "image" in o)
                if list(k) not in options]
    options = [list(o) for o in options]
    if _is_int(width):  # an encoder-free audio model (Gemma 4 unified) embeds the frames as such
        options += [o + ["embed-width"] for o in options if "frames-first" in o]
    if any(name.endswith("mask") for name in takes):  # a mask the encoder indexes with
        options += [o + ["bool-mask"] for o in options]
    base = dict(plain.base, text=max(plain.kinds.get("text") or [plain.base.get("text", 16)]))
    return Recipe(plain.kinds, base, make, options)


def image_tokens_recipe(model: Any, plain: Recipe) -> Recipe:
    """Text and one picture per sample as a LLaVA-style processor gives them: the picture at
    the vision tower's size, and in the text as many image tokens as the model's own
    ``get_image_features`` makes of it (counted eagerly once, as a processor knows it), so
    its feature merge runs. The layouts tried: the picture as it is, as one tile, and each
    with its size where the model takes ``image_sizes``."""
    import torch

    cfg = model.config
    vocab = _text_config(cfg).vocab_size
    named = set(inspect.signature(model.forward).parameters)
    takes = set(inspect.signature(model.get_image_features).parameters)
    side = plain.base.get("image", 32)

    def pictures(batch: int, use: List[str]) -> Dict[str, Any]:
        if "patch-positions" in use:
            return _positioned_patches(cfg.vision_config, batch)
        _, kw = plain.make(batch, {"image": side}, ["image"])
        pixels = kw["pixel_values"]
        if "tiles" in use:  # (batch, tiles, channels, side, side)
            pixels = pixels.unsqueeze(1)
        kw = {"pixel_values": pixels}
        if "sized" in use:  # each picture's (height, width), for towers of any size
            kw["image_sizes"] = torch.tensor([[side, side]] * batch)
        if "packed" in use:
            kw = _packed_pictures(pixels, cfg.vision_config.patch_size)
        return kw

    def per_picture(use: List[str]) -> int:
        kw = pictures(1, use)
        try:
            with torch.no_grad():
                return _count_rows(model.get_image_features(**{k: v for k, v in kw.items()
                                                               if k in takes}))
        except Exception:  # noqa: BLE001 - a layout the tower refuses: so will the forward
            return 0

    layouts = [["text"], ["text", "tiles"]]
    if "image_sizes" in named | takes:
        layouts += [u + ["sized"] for u in layouts]
    if "image_position_ids" in named | takes:
        layouts += [["text", "patch-positions"]]
    if "target_sizes" in named | takes:
        layouts += [["text", "packed"]]
    counts = {tuple(u): per_picture(u) for u in layouts}
    room = max(counts.values()) + 2

    def make(batch: int, sizes: Dict[str, int], use: List[str]):
        args, kw = plain.make(batch, sizes, ["text"])
        ids = kw["input_ids"]
        ids[ids >= vocab - 2] = 4  # no stray media token
        n = counts[tuple(u for u in use if u != "image")]
        ids[:, 1:1 + min(n, ids.shape[1] - 2)] = vocab - 1
        kw.update({k: v for k, v in pictures(batch, use).items() if k in named})
        if "packed" in use and "mm_token_type_ids" in named:  # a packer's processor marks them
            kw["mm_token_type_ids"] = (ids == vocab - 1).long()
        return args, kw

    texts = plain.kinds.get("text", [])
    fits = [n for n in texts if n >= room]
    kinds = {"text": fits if len(fits) > 1 else [room + n for n in texts]}
    options = [u for u in layouts if counts[tuple(u)]] or [["text"]]
    return Recipe(kinds, {"text": kinds["text"][-1]}, make, options)


def _packed_pictures(pixels: Any, patch: int) -> Dict[str, Any]:
    """Pictures as a NaViT packer (MiniCPM-V's processor) gives them: every picture's patches
    side by side in one (1, channels, patch, patches x patch) strip, with each picture's
    patch grid (rows, columns) in ``target_sizes``."""
    import torch

    batch, channels, side, _ = pixels.shape
    n = side // patch
    strips = pixels.reshape(batch, channels, n, patch, n, patch).permute(1, 3, 0, 2, 4, 5)
    return {"pixel_values": strips.reshape(1, channels, patch, batch * n * n * patch),
            "target_sizes": torch.tensor([[n, n]] * batch, dtype=torch.int32)}


def _positioned_patches(vision: Any, batch: int) -> Dict[str, Any]:
    """One picture per sample as a Gemma 4 processor gives it: its patches as rows of
    channels x patch x patch values (the ``model_patch_size`` the model embeds, else its
    ``patch_size``), ``pooling_kernel_size`` (else 2) patches a side, with each patch's (x, y)
    in ``image_position_ids``."""
    import torch

    patch = getattr(vision, "model_patch_size", None) or vision.patch_size
    channels = next((c for c in (getattr(vision, k, None) for k in
                                 ("in_channels", "num_channels")) if _is_int(c)), 3)
    pool = getattr(vision, "pooling_kernel_size", None)
    n = pool if _is_int(pool) and pool > 1 else 2
    xy = torch.tensor([[x, y] for y in range(n) for x in range(n)])
    return {"pixel_values": torch.randn(batch, n * n, channels * patch * patch),
            "image_position_ids": xy.expand(batch, -1, -1).clone()}


def _edited(plain: Recipe, edit: Callable[[int, Dict[str, Any]], Dict[str, Any]]) -> Recipe:
    """The plain recipe with each call's keyword inputs passed through ``edit(batch, kw)``."""

    def make(batch: int, sizes: Dict[str, int], use: List[str]):
        args, kw = plain.make(batch, sizes, use)
        return args, edit(batch, kw)

    return Recipe(plain.kinds, plain.base, make, plain.options)


def global_attention_recipe(plain: Recipe) -> Recipe:
    """The plain inputs with ``global_attention_mask`` set on each text's first token."""
    import torch

    def edit(batch: int, kw: Dict[str, Any]) -> Dict[str, Any]:
        ids = kw.get("input_ids")
        if ids is not None:
            mask = torch.zeros_like(ids)
            mask[:, 0] = 1
            kw["global_attention_mask"] = mask
        return kw

    return _edited(plain, edit)


def half_recipe(plain: Recipe) -> Recipe:
    """The plain inputs with their floating-point tensors in float16."""
    import torch

    return _edited(plain, lambda batch, kw: {
        k: v.half() if isinstance(v, torch.Tensor) and v.is_floating_point() else v
        for k, v in kw.items()})


def _pad_token(cfg: Any) -> None:
    """A padding id where the config has none, as fine-tuning scripts set one (a decoder's
    classification head pools on the last token that is not padding); 0 never occurs in the
    zoo's text, which draws ids from 4 up."""
    if getattr(cfg, "pad_token_id", None) is None:
        cfg.pad_token_id = 0


def labels_recipe(model: Any, plain: Recipe) -> Recipe:
    """The plain inputs with a class label per sample, and each text as a tokenizer ends it:
    one end-of-sequence token, the last (BART-style heads pool on it and refuse rows that
    differ in their count); an encoder-decoder's decoder gets the text shifted, its default."""
    import torch

    cfg = model.config
    eos, vocab = _find(cfg, "eos_token_id"), _find(cfg, "vocab_size", default=VOCAB)
    classes = cfg.num_labels if _is_int(cfg.num_labels) and cfg.num_labels > 1 else 2

    def edit(batch: int, kw: Dict[str, Any]) -> Dict[str, Any]:
        ids = kw.get("input_ids")
        if ids is not None:  # an encoder-decoder head runs its decoder on the same text
            kw.pop("decoder_input_ids", None)
        if ids is not None and _is_int(eos) and _is_int(vocab) and 0 <= eos < vocab:
            ids[ids == eos] = 4 if eos != 4 else 5
            ids[:, -1] = eos
        kw["labels"] = torch.randint(0, classes, (batch,))
        return kw

    return _edited(plain, edit)


VIDEO_FRAMES = 8


def image_recipe(channels: int = 3, side: int = 32, sides: Optional[List[int]] = None,
                 positional: bool = True, name: str = "pixel_values") -> Recipe:
    import torch

    def make(batch: int, sizes: Dict[str, int], use: List[str]):
        s = sizes["image"]
        # a video network (torchvision's R3D, S3D, Swin3D): (batch, channels, frames, side, side)
        x = torch.randn(batch, channels, VIDEO_FRAMES, s, s) if "video" in use \
            else torch.randn(batch, channels, s, s)
        return ((x,), {}) if positional else ((), {name: x})

    return Recipe({"image": sides or _sizes(side, [2 * side, side + side // 2])}, {"image": side},
                  make, [["image"], ["image", "video"]])


# -- the entries ----------------------------------------------------------------------------------
#: recipes by model name, kept across re-executions of this module: the harness loads
#: ``ZOO.<name>.build`` and ``ZOO.<name>.inputs`` as two references, executing the file twice
_STASH: Dict[str, "Recipe"] = sys.modules.setdefault(
    "_zoo_build_stash", type(sys)("_zoo_build_stash")).__dict__.setdefault("recipes", {})


class Entry:
    """One catalogue model: ``build()`` and ``inputs(batch, seq_len)`` for the harness, where
    ``seq_len`` indexes the probe's plan (see the module docstring)."""

    def __init__(self, name: str) -> None:
        self.name = name
        prefix, _, self.key = name.partition("_")
        if prefix not in LIB_PREFIX or not self.key:
            raise AttributeError(f"not a zoo model name: {name!r}")
        self.lib = LIB_PREFIX[prefix]
        self._recipe: Optional[Recipe] = None
        self._plan: Optional[Dict[str, Any]] = None

    # the harness's two callables
    def build(self):
        import torch

        torch.manual_seed(0)
        model = BUILDERS[self.lib](self.key)
        if isinstance(model, torch.nn.Module):
            model.eval()
        self._recipe = _STASH[self.name] = RECIPES[self.lib](model, self.key)
        return model

    def inputs(self, batch: int, seq_len: Optional[int] = None):
        plan = self.plan()
        row = plan["shapes"][seq_len or 0]
        recipe = self._recipe or _STASH[self.name]
        args, kw = recipe.make(row["batch"], row["sizes"], plan["use"])
        return args, kw

    def plan(self) -> Dict[str, Any]:
        if self._plan is None:
            with open(plan_path(self.name), encoding="utf-8") as fh:
                self._plan = json.load(fh)
        return self._plan


def plan_path(name: str) -> str:
    return os.path.join(PLANS, f"{name}.json")


class _Zoo:
    """``ZOO.<name>``: the entry of any catalogue name, made on first use (so the harness's
    ``bench/zoo_build.py:ZOO.hf_llama.build`` resolves without listing the catalogue)."""

    def __init__(self) -> None:
        self._entries: Dict[str, Entry] = {}

    def __getattr__(self, name: str) -> Entry:
        if name.startswith("__"):
            raise AttributeError(name)
        if name not in self._entries:
            self._entries[name] = Entry(name)
        return self._entries[name]


ZOO = _Zoo()


# -- transformers ---------------------------------------------------------------------------------
DROP_KEYS = {"transformers_version", "architectures", "_name_or_path", "model_type", "dtype",
             "torch_dtype", "id2label", "label2id", "_commit_hash", "output_attentions"}


def _hf_classes(model_type: str, table: str = "MODEL_MAPPING_NAMES"):
    """(config class, model class) of ``model_type`` in one of transformers' auto tables
    (``MODEL_MAPPING_NAMES``: the base model)."""
    import transformers
    from transformers.models.auto import modeling_auto
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    cls_name = getattr(modeling_auto, table)[model_type]
    if isinstance(cls_name, (list, tuple)):
        cls_name = cls_name[0]
    return CONFIG_MAPPING[model_type], getattr(transformers, cls_name)


def hf_config(model_type: str, sub_config: str = "", depthwise: bool = False,
              fill_unset: bool = False):
    """The architecture's default config, shrunk; ``sub_config``: a sub-config the default
    leaves out (``None``: Gemma 4's optional vision and audio) made from its own defaults, for
    a variant that needs it; ``depthwise``, ``fill_unset``: see ``shrink``."""
    config_cls, model_cls = _hf_classes(model_type)
    d = {k: v for k, v in config_cls().to_dict().items() if k not in DROP_KEYS}
    if sub_config and d.get(sub_config) is None:
        sub = _default_sub_config(config_cls, sub_config)
        if sub is not None:
            d[sub_config] = {k: v for k, v in sub.to_dict().items()
                             if k not in DROP_KEYS or k == "model_type"}
    out = shrink(d, depthwise, fill_unset)
    _default_mrope(out, model_cls)
    return config_cls(**out)


def _default_sub_config(config_cls: Any, name: str) -> Any:
    """The default config of a composite config's sub-config ``name``: its class's, or for an
    ``AutoConfig`` entry that of the model type its spec names (``gemma4_vision``)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    spec = (getattr(config_cls, "sub_configs_defaults", None) or {}).get(name)
    cls = getattr(spec, "config_class", spec) or getattr(config_cls, "sub_configs", {}).get(name)
    kwargs = getattr(spec, "init_kwargs", None) or {}
    model_type = getattr(spec, "model_type", None)
    if model_type and model_type in CONFIG_MAPPING and getattr(cls, "__name__", "") == "AutoConfig":
        cls = CONFIG_MAPPING[model_type]
    try:
        return cls(**kwargs)
    except Exception:  # noqa: BLE001 - no default to make: the variant runs as before
        return None


_MROPE_DEFAULT = re.compile(r"""\.get\(\s*["']mrope_section["']\s*,\s*\[""")
#: the rotary code splits its frequencies by the sections (so they must sum exactly); an
#: interleaved one (Qwen3.5's strided slices) takes any
_MROPE_SPLIT = re.compile(r"\.split\(\s*self\.mrope_section")


def _default_mrope(cfg: Dict[str, Any], model_cls: Any) -> None:
    """A multimodal rotary split the model code defaults (``rope_parameters.get("mrope_section",
    [16, 24, 24])``) sums to the published head dim: give the shrunk config one that sums to
    its own half rotary dim (Qwen2.5-VL's and GLM-4V's text models), in the config and in each
    of its sub-configs (``text_config``: where a vision-language model keeps its rotary)."""
    try:
        source = inspect.getsource(sys.modules[model_cls.__module__])
    except (OSError, TypeError, KeyError):
        return
    if _MROPE_DEFAULT.search(source):
        _mrope_split(cfg, exact=bool(_MROPE_SPLIT.search(source)))


def _mrope_split(cfg: Dict[str, Any], exact: bool = False) -> None:
    for v in cfg.values():
        if isinstance(v, dict) and "model_type" in v:
            _mrope_split(v, exact)
    rope = cfg.get("rope_parameters")
    if not isinstance(rope, dict) or "mrope_section" in rope:
        return
    heads = next((cfg[h] for h in HEADS if _is_int(cfg.get(h))), None)
    hd = cfg.get("head_dim") if _is_int(cfg.get("head_dim")) else \
        (cfg["hidden_size"] // heads if heads and _is_int(cfg.get("hidden_size")) else None)
    factor = rope.get("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0))
    factor = factor if isinstance(factor, (int, float)) and 0 < factor <= 1 else 1.0
    if exact and hd and int(hd * factor) < 6 and _is_int(cfg.get("hidden_size")):
        # three sections need a rotary pair each: a head the shrink left too narrow for that
        # (GLM-4.5V's 8 wide, half of it rotated) is widened, as its config's ``head_dim``
        wide = hd
        while int(wide * factor) < 6:
            wide *= 2
        cfg["head_dim"], hd = wide, wide
    if hd:
        hd = int(hd * factor)  # GLM rotates part of each head
    if hd and hd >= 6:
        half = hd // 2
        third = max(1, half // 3)
        cfg["rope_parameters"] = dict(rope, mrope_section=[half - 2 * third, third, third])


class HfVariant(NamedTuple):
    """A setting a replay of the same architecture adds where the library's default never runs
    the code a finding sits on: ``hf_<type>__<variant>`` (same code, so the same split)."""

    #: the text of the modeling file that says the setting applies (read, never imported)
    marker: str
    #: sets it on the built model (its config included)
    apply: Callable[[Any], None]
    #: the variant's inputs: (the model, the plain recipe) -> the recipe the replay uses
    recipe: Optional[Callable[[Any, "Recipe"], "Recipe"]] = None
    #: the auto table whose class it builds (a task head), where not the base model's
    table: str = "MODEL_MAPPING_NAMES"
    #: a sub-config the architecture's config must have (``vision_config``: not the text-only
    #: model types that share a vision-language model's file)
    sub_config: str = ""
    #: a text of the modeling file that rules the variant out (another variant covers it)
    unless: str = ""


def _eager_experts(model: Any) -> None:
    model.set_experts_implementation("eager")


HF_VARIANTS: Dict[str, HfVariant] = {
    # transformers dispatches mixture-of-experts layers to a fused ``grouped_mm`` kernel unless
    # asked for ``eager``, the per-expert loop people write and compile themselves
    "experts_eager": HfVariant("@use_experts_implementation", _eager_experts),
    # a vision-language model fed what its processor gives it: patches, their grid and the
    # image (and video) tokens in the text, so its feature merge and multimodal rotary run
    "grid_images": HfVariant("image_grid_thw", lambda model: _media_token_ids(model.config),
                             grid_recipe, sub_config="vision_config"),
    # an audio-language model given mel features and, in its text, as many audio tokens as
    # its own encoder makes of them: its audio merge runs
    "audio_tokens": HfVariant("def get_audio_features", lambda model: _audio_token_id(model.config),
                              audio_recipe, sub_config="audio_config"),
    # a LLaVA-style vision-language model given a picture and, in its text, as many image
    # tokens as its own vision tower makes of it: its projector and feature merge run (the
    # Qwen-VL family, which takes patches and their grid, is grid_images')
    "image_tokens": HfVariant("def get_placeholder_mask", lambda model: _media_token_ids(model.config),
                              image_tokens_recipe, sub_config="vision_config",
                              unless="image_grid_thw"),
    # global attention on each text's first token, as Longformer's classification and
    # question-answering heads set it: the global-attention path the plain call never takes
    "global_attention": HfVariant("global_attention_mask", lambda model: None,
                                  lambda model, rec: global_attention_recipe(rec)),
    # half precision, as models are served: the code a file keeps for float16 (overflow
    # clamps, ``if x.dtype == torch.float16 and torch.isinf(x).any()``)
    "half": HfVariant("== torch.float16", lambda model: model.half(),
                      lambda model, rec: half_recipe(rec)),
    # the sequence-classification head with labels, as fine-tuning runs it: its pooling and
    # its loss
    "seqcls_labels": HfVariant("ForSequenceClassification", lambda model: _pad_token(model.config),
                               labels_recipe,
                               "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES"),
}


def variant_of(key: str) -> Tuple[str, str]:
    """``mixtral__experts_eager`` -> (``mixtral``, ``experts_eager``); no variant: ``""``."""
    base, _, variant = key.partition("__")
    return base, variant


def hf_variants(model_type: str) -> List[str]:
    """The variants whose marker is in the architecture's modeling source (read, not imported:
    the same test transformers' ``_can_set_experts_implementation`` makes)."""
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    module = model_type_to_module_name(model_type)
    path = os.path.join(LIBS, "transformers", "models", module, f"modeling_{module}.py")
    try:
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
    except OSError:
        return []
    from transformers.models.auto import modeling_auto
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return [v for v, spec in HF_VARIANTS.items()
            if spec.marker in source and not (spec.unless and spec.unless in source)
            and model_type in getattr(modeling_auto, spec.table)
            and (not spec.sub_config
                 or spec.sub_config in getattr(CONFIG_MAPPING[model_type], "sub_configs", {}))]


def build_hf(key: str):
    # transformers builds a timm backbone only where torchvision imports (its
    # ``is_timm_available``); the shim's placeholders stand for it as they do for timm's models
    install_torchvision_shim()
    model_type, variant = variant_of(key)
    if variant and variant not in HF_VARIANTS:
        raise ValueError(f"unknown transformers variant {variant!r} (known: {sorted(HF_VARIANTS)})")
    _, model_cls = _hf_classes(model_type, HF_VARIANTS[variant].table if variant else
                               "MODEL_MAPPING_NAMES")
    need = HF_VARIANTS[variant].sub_config if variant else ""
    # the plain shrunk config; where it does not build, groups that follow the widths (a layer
    # refusing channels vs groups), then sizes the default left None, then both
    tried: List[Dict[str, Any]] = []
    first: Optional[BaseException] = None
    for depthwise, fill_unset in ((False, False), (True, False), (False, True), (True, True)):
        try:  # (a config class that validates refuses some shrunk configs itself)
            config = hf_config(model_type, need, depthwise=depthwise, fill_unset=fill_unset)
            if config.to_dict() in tried:
                continue
            tried.append(config.to_dict())
            model = model_cls(config)
            break
        except Exception as exc:  # noqa: BLE001 - the next way, or the first error
            first = first or exc
    else:
        assert first is not None
        raise first
    if variant:
        HF_VARIANTS[variant].apply(model)
    return model


def hf_variant_recipe(model: Any, key: str) -> "Recipe":
    """The plain recipe, or the one the key's variant makes of it."""
    rec = hf_recipe(model)
    spec = HF_VARIANTS.get(variant_of(key)[1])
    return spec.recipe(model, rec) if spec is not None and spec.recipe is not None else rec


# -- timm -----------------------------------------------------------------------------------------
#: timm models are made at this side when their class takes ``img_size`` (ViTs and friends
#: fixed to 224 would replay 196 tokens a picture)
TIMM_SIDE = 64
TIMM_CHOICES = os.path.join(DOWNLOADS, "zoo-timm-choices.json")  # derived; made again if lost


def build_timm(module: str):
    install_torchvision_shim()
    import timm

    try:  # the replay's plan names the variant the probe chose
        with open(plan_path(f"timm_{module}"), encoding="utf-8") as fh:
            name = json.load(fh).get("variant") or timm_choice(module)
    except (OSError, ValueError):
        name = timm_choice(module)
    import torch

    try:
        model = timm.create_model(name, pretrained=False, img_size=TIMM_SIDE)
        chans = (getattr(model, "pretrained_cfg", None) or {}).get("input_size", (3,))[0]
        with torch.no_grad():  # made at that side, it must also run there
            model.eval()(torch.zeros(1, chans, TIMM_SIDE, TIMM_SIDE))
        model.zoo_side = TIMM_SIDE  # what timm_recipe takes as the model's own side
        return model
    except Exception:  # noqa: BLE001 - no img_size keyword, or not at this side: as published
        torch.manual_seed(0)
        return timm.create_model(name, pretrained=False)


def timm_choice(module: str) -> str:
    """The family's model with the fewest parameters (on the meta device), ties by name."""
    try:
        with open(TIMM_CHOICES, encoding="utf-8") as fh:
            cached = json.load(fh)
    except (OSError, ValueError):
        cached = {}
    if module in cached:
        return cached[module]
    install_torchvision_shim()
    import timm
    import torch

    best: Optional[Tuple[int, str]] = None
    for name in sorted(timm.list_models(module=module)):
        try:
            with torch.device("meta"):
                m = timm.create_model(name, pretrained=False)
            n = sum(p.numel() for p in m.parameters())
        except Exception:  # noqa: BLE001 - a variant that needs arguments: not a candidate
            continue
        if best is None or (n, name) < best:
            best = (n, name)
    if best is None:
        raise RuntimeError(f"no model of timm module {module} builds with default arguments")
    cached[module] = best[1]
    tmp = f"{TIMM_CHOICES}.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(cached, fh, indent=0, sort_keys=True)
    os.replace(tmp, TIMM_CHOICES)
    return best[1]


def timm_recipe(model: Any, key: str) -> Recipe:
    cfg = getattr(model, "pretrained_cfg", None) or {}
    size = cfg.get("input_size") or (3, 224, 224)
    chans = size[0]
    native = int(size[-1])  # the published resolution: the probe's base (every model takes it)
    native = getattr(model, "zoo_side", None) or native  # built at TIMM_SIDE
    # the small sides; the published one (the probe's base) only when none of them runs
    return image_recipe(chans, side=native, sides=[64, 48, 32])


# -- diffusers ------------------------------------------------------------------------------------
DIFFUSERS_FOLDERS = ("unets", "transformers", "autoencoders", "controlnets")


def diffusers_classes() -> List[str]:
    import diffusers.models as dm

    out = []
    for sub, names in getattr(dm, "_import_structure", {}).items():
        if sub.split(".")[0] in DIFFUSERS_FOLDERS:
            out.extend(n for n in names if n[0].isupper())
    return sorted(set(out))


def diffusers_kwargs(cls: Any) -> Dict[str, Any]:
    sig = inspect.signature(cls.__init__)
    d = {k: p.default for k, p in sig.parameters.items()
         if k != "self" and p.default is not inspect.Parameter.empty
         and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    small = shrink(d)
    for k in ("norm_num_groups", "resnet_groups", "num_groups"):  # must divide the widths
        if _is_int(small.get(k)):
            small[k] = min(small[k], 8)
    for k in ("cross_attention_dim", "joint_attention_dim", "caption_channels", "text_embed_dim",
              "encoder_hid_dim", "pooled_projection_dim", "projection_class_embeddings_input_dim",
              "text_dim", "context_dim", "caption_projection_dim", "text_hidden_dim"):
        if _is_int(small.get(k)):
            small[k] = min(small[k], 32)
    for k in ("sample_size",):
        if _is_int(small.get(k)):
            small[k] = min(small[k], 16)
    head = small.get("attention_head_dim")
    for k in ("axes_dims_rope", "rope_axes_dim", "axes_dims", "axes_dim"):
        axes = small.get(k)
        if _is_int(head) and isinstance(axes, (tuple, list)) and axes and sum(axes) != head:
            # rotary axes split the head dim in even parts (Flux's (16, 56, 56) of 128)
            even = max(2, head // len(axes) // 2 * 2)
            small[k] = type(axes)([even] * (len(axes) - 1) + [head - even * (len(axes) - 1)])
    return small


def build_diffusers(name: str):
    import diffusers

    cls = getattr(diffusers, name)
    kwargs = diffusers_kwargs(cls)
    try:
        return cls(**kwargs)
    except Exception:  # noqa: BLE001 - a block whose GroupNorm keeps the library's 32 groups
        wide = _wide_channels(kwargs)
        if wide == kwargs:
            raise
        return cls(**wide)


def _wide_channels(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The per-block channel lists at 32, 64, 96...: some blocks build ``GroupNorm(32, c)``
    whatever the config's ``norm_num_groups`` (diffusers' temporal and Mochi VAEs), which the
    shrunk widths (16, 32...) cannot divide. Tried only where the shrunk config does not build."""
    out = dict(kwargs)
    for k, v in kwargs.items():
        if k.endswith("channels") and isinstance(v, (list, tuple)) and v and \
                all(_is_int(x) for x in v):
            out[k] = type(v)(32 * (i + 1) for i in range(len(v)))
    return out


def diffusers_recipe(model: Any, key: str) -> Recipe:
    import torch

    cfg = dict(getattr(model, "config", {}) or {})
    params = inspect.signature(model.forward).parameters
    named = set(params)
    chans = cfg.get("in_channels") or 4
    chans = chans if _is_int(chans) else 4
    ctx = next((cfg[k] for k in ("cross_attention_dim", "joint_attention_dim", "caption_channels",
                                 "text_embed_dim", "encoder_hid_dim", "text_dim", "context_dim")
                if _is_int(cfg.get(k))), 32)
    pooled = next((cfg[k] for k in ("pooled_projection_dim",
                                    "projection_class_embeddings_input_dim")
                   if _is_int(cfg.get(k))), 16)
    first = next(iter(n for n in params if n != "self"), "sample")
    required = [n for n, p in params.items() if n != "self" and p.default is inspect.Parameter.empty
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    video = "3D" in key or "Video" in key or "video" in key
    side = 16

    def make(batch: int, sizes: Dict[str, int], use: List[str]):
        s = sizes["latent"]
        kw: Dict[str, Any] = {}
        if "tokens" in use:  # packed latents: 2x2 patches of the latent channels ("packed")
            kw[first] = torch.randn(batch, s * s // 4 or 1, chans * (4 if "packed" in use else 1))
        elif video and "frames-first" in use:  # (batch, frames, channels, h, w): CogVideoX
            kw[first] = torch.randn(batch, 2, chans, s, s)
        elif video:
            kw[first] = torch.randn(batch, chans, 2, s, s)
        else:
            kw[first] = torch.randn(batch, chans, s, s)
        if "timestep" in named:
            kw["timestep"] = torch.randint(0, 1000, (batch,)).float()
        if "encoder_hidden_states" in named and "context" in use:
            kw["encoder_hidden_states"] = torch.randn(batch, 7, ctx)
        if "pooled_projections" in named and "context" in use:
            kw["pooled_projections"] = torch.randn(batch, pooled)
        if "class_labels" in named and "labels" in use:
            kw["class_labels"] = torch.randint(0, 10, (batch,))
        for n in required:  # what else the forward requires, by its name
            if n in kw or n == first:
                continue
            if "timestep" in n or n in ("t", "time", "sigma", "sigmas"):
                kw[n] = torch.randint(0, 1000, (batch,)).float()
            elif "pooled" in n:
                kw[n] = torch.randn(batch, pooled)
            elif "mask" in n:
                kw[n] = torch.ones(batch, 7)
            elif "label" in n or "class" in n:
                kw[n] = torch.randint(0, 10, (batch,))
            elif n.endswith("ids"):
                kw[n] = torch.zeros(7, 3)
            elif "cond" in n and "controlnet" not in n:
                kw[n] = torch.randn(batch, chans, s, s)
            elif "controlnet" not in n:
                kw[n] = torch.randn(batch, 7, ctx)
        if "tokens" in use:  # position ids of packed tokens (Flux): one row per image token
            for n in named & {"img_ids", "image_ids", "latent_ids"}:
                kw.setdefault(n, torch.zeros(kw[first].shape[1], 3))
            for n in named & {"txt_ids", "text_ids"}:
                kw.setdefault(n, torch.zeros(7, 3))
            if "img_shapes" in named:  # Qwen-Image: (frames, rows, columns) of each sample
                kw["img_shapes"] = [[(1, s // 2, s // 2)]] * batch
            if "encoder_hidden_states_mask" in named and "encoder_hidden_states" in kw:
                kw["encoder_hidden_states_mask"] = torch.ones(batch, 7)
        if "controlnet_cond" in named:  # the conditioning image: 2 ** (its blocks - 1) per latent
            up = 2 ** max(0, len(cfg.get("conditioning_embedding_out_channels") or (0, 0, 0, 0)) - 1)
            kw["controlnet_cond"] = torch.randn(batch, cfg.get("conditioning_channels") or 3,
                                                s * up, s * up)
        return (), kw

    base = ["latent"] + (["context"] if "encoder_hidden_states" in named else [])
    options = [base + ["labels"], base, ["latent"], base + ["tokens"], ["latent", "tokens"],
               base + ["tokens", "packed"]]
    if video:
        options += [base + ["frames-first"], ["latent", "frames-first"]]
    return Recipe({"latent": [32, 24, 16]}, {"latent": side}, make, options)


# -- torchvision ----------------------------------------------------------------------------------
def tv_choices() -> List[str]:
    """One builder per module of torchvision.models (a family: ``resnet``,
    ``detection.faster_rcnn``, ...): the one with the fewest parameters (meta device), ties
    by name."""
    import torch

    tvm = _torchvision()
    best: Dict[str, Tuple[int, str]] = {}
    for name in sorted(tvm.list_models()):
        fn = tvm.get_model_builder(name)
        family = fn.__module__
        try:
            with torch.device("meta"):
                n = sum(p.numel() for p in _tv_model(tvm, name).parameters())
        except Exception:  # noqa: BLE001 - counted last (ties by name): still a candidate
            n = 1 << 62
        if family not in best or (n, name) < best[family]:
            best[family] = (n, name)
    return sorted(v[1] for v in best.values())


def _tv_model(tvm: Any, name: str):
    """Random weights, the backbone's too (a detection model's default backbone weights are
    ImageNet's, downloaded: never)."""
    try:
        return tvm.get_model(name, weights=None, weights_backbone=None)
    except TypeError:
        return tvm.get_model(name, weights=None)


def build_tv(name: str):
    return _tv_model(_torchvision(), name)


def tv_recipe(model: Any, key: str) -> Recipe:
    fixed = getattr(model, "image_size", None)  # a ViT asserts its one published side
    if _is_int(fixed):
        return image_recipe(3, side=fixed, sides=[fixed])
    return image_recipe(3, side=64, sides=[96, 64, 48])


#: torchvision's wheel (``bench/zoo.py fetch``), kept apart from zoo-libs: transformers takes
#: a torchvision it finds there as importable, and it is not
TV = os.path.join(DOWNLOADS, "zoo-tv")
TV_VERSION = "0.29.1"


class _RealTorchvision(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """torchvision's own Python modules without its compiled ops: PyPI's torchvision does not
    import beside this torch (``operator torchvision::nms does not exist``: its ``_C`` library
    targets another torch). The package's ``__init__`` runs without loading the extension and
    its op registrations (``extension``, ``_meta_registrations`` and
    ``_autograd_registrations`` are empty modules here: ``_has_ops()`` is False and
    ``_assert_has_ops()`` raises); every other module is torchvision's own file. A model that
    calls a compiled op (``nms``, ``roi_align``, ``deform_conv2d``) fails with that error."""

    STUBS = ("torchvision.extension", "torchvision._meta_registrations",
             "torchvision._autograd_registrations")

    def find_spec(self, fullname: str, path: Any = None, target: Any = None):
        if fullname == "torchvision":
            return importlib.util.spec_from_loader(fullname, self, is_package=True)
        if fullname in self.STUBS:
            return importlib.util.spec_from_loader(fullname, self, is_package=False)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        name = module.__name__
        if name == "torchvision":
            root = os.path.join(TV, "torchvision")
            module.__path__ = [root]
            module.__file__ = os.path.join(root, "__init__.py")
            with open(module.__file__, encoding="utf-8") as fh:
                src = fh.read()
            src = src.replace("from . import extension", "pass  # zoo: no compiled ops")
            src = re.sub(r"from torchvision import \((?:[^)]*)\)", "pass  # zoo: imported lazily",
                         src, count=1)
            exec(compile(src, module.__file__, "exec"), module.__dict__)
        elif name == "torchvision.extension":
            def _has_ops() -> bool:
                return False

            def _assert_has_ops() -> None:
                raise RuntimeError("torchvision's compiled ops (torchvision::nms, roi_align, ...) "
                                   "do not load beside this torch")

            module._has_ops = _has_ops
            module._assert_has_ops = _assert_has_ops


def _forget_torchvision() -> None:
    """A process that probes timm (placeholders) and torchvision (its own modules) in turn
    switches between the two: what the other imported is forgotten."""
    for mod in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[mod]


def _torchvision():
    if not any(isinstance(f, _RealTorchvision) for f in sys.meta_path):
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _TorchvisionShim)]
        _forget_torchvision()
        sys.meta_path.insert(0, _RealTorchvision())
    import torchvision.models

    return torchvision.models


BUILDERS: Dict[str, Callable[[str], Any]] = {"transformers": build_hf, "timm": build_timm,
                                             "diffusers": build_diffusers, "torchvision": build_tv}
RECIPES: Dict[str, Callable[[Any, str], Recipe]] = {
    "transformers": hf_variant_recipe, "timm": timm_recipe,
    "diffusers": diffusers_recipe, "torchvision": tv_recipe}


def catalogue(libs: Optional[List[str]] = None) -> List[str]:
    """Every model name, mechanically (see the module docstring)."""
    libs = libs or ["transformers", "timm", "diffusers", "torchvision"]
    out: List[str] = []
    if "transformers" in libs:
        from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

        out += [f"hf_{t}" for t in sorted(MODEL_MAPPING_NAMES)]
        out += [f"hf_{t}__{v}" for t in sorted(MODEL_MAPPING_NAMES) for v in hf_variants(t)]
    if "timm" in libs:
        install_torchvision_shim()
        import timm

        out += [f"timm_{m}" for m in sorted(timm.list_modules())]
    if "diffusers" in libs:
        out += [f"diffusers_{c}" for c in diffusers_classes()]
    if "torchvision" in libs and os.path.isdir(os.path.join(TV, "torchvision")):
        out += [f"tv_{n}" for n in tv_choices()]
    return out


# -- the probe ------------------------------------------------------------------------------------
class _Timeout(Exception):
    pass


def _alarm(_sig, _frm):
    raise _Timeout("probe timed out")


def _forward(model: Any, args: tuple, kw: dict) -> None:
    import torch

    with torch.no_grad():
        model(*args, **kw)


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return " ".join(t.strip() for t in text[:2])[:300]


def builder_digest() -> str:
    """The digest of this file: a probe made by another version of it is made again."""
    import hashlib

    with open(os.path.abspath(__file__), "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()[:16]


def recipe_digest(e: Entry, model: Any, use: List[str], levels: List[Dict[str, int]]) -> str:
    """What a replay of this model depends on besides the versions: the class, its config,
    the inputs used and the sizes (a record whose recipe differs is replayed)."""
    import hashlib

    if e.lib == "transformers":
        cfg: Any = model.config.to_dict()
    elif e.lib == "diffusers":
        cfg = dict(model.config)
    elif e.lib == "timm":
        cfg = {"variant": timm_choice(e.key)}
    else:
        cfg = {"builder": e.key, "torchvision": TV_VERSION}
    doc = {"class": type(model).__name__, "config": cfg, "use": use, "levels": levels,
           "batches": BATCHES, "version": BUILDER_VERSION}
    variant = variant_of(e.key)[1]
    if variant:  # absent otherwise, so the records of the plain builds keep their digests
        doc["variant"] = variant
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:16]


IMAGE_SCALES = (2, 4)


def _first_option(model: Any, rec: "Recipe", errors: List[str]) -> Optional[List[str]]:
    """The first of the recipe's input sets an eager forward accepts at the base sizes."""
    import torch

    for option in rec.options:
        args, kw = rec.make(PROBE_BATCH, dict(rec.base), option)
        try:
            torch.manual_seed(0)
            _forward(model, args, kw)
            return option
        except _Timeout:
            raise
        except Exception as exc:  # noqa: BLE001
            errors.append(f"{'+'.join(option)}: {_short(exc)}")
    return None


def probe(name: str, budget: int = 120) -> Dict[str, Any]:
    """Build the model and find the inputs and sizes an eager forward accepts: its plan."""
    import torch

    t0 = time.perf_counter()
    out: Dict[str, Any] = {"name": name, "builder_version": BUILDER_VERSION,
                           "builder_digest": builder_digest()}
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(budget)
    stage = "build"
    try:
        e = Entry(name)
        out["lib"] = e.lib
        model = e.build()
        if isinstance(model, torch.nn.Module):
            out["params"] = sum(p.numel() for p in model.parameters())
            out["class"] = type(model).__name__
        if e.lib == "timm":
            out["variant"] = timm_choice(e.key)
        rec = e._recipe
        assert rec is not None
        stage = "forward"
        errors: List[str] = []
        use = _first_option(model, rec, errors)
        base, sides = rec.base.get("image"), rec.kinds.get("image")
        for scale in IMAGE_SCALES if use is None and base and sides else ():
            # a network that downsamples past a small image (MobileViT's unfold, Inception's
            # 3x3 at 2x2): the same recipe at larger sides, the smallest that runs
            rec.base["image"], rec.kinds["image"] = base * scale, [v * scale for v in sides]
            use = _first_option(model, rec, errors)
            if use is not None:
                break
        if use is None:
            raise RuntimeError("no input set runs: " + " | ".join(errors)[:600])
        kept: Dict[str, List[int]] = {}
        for kind in rec.kinds:
            if kind not in use:
                continue
            kept[kind] = []
            for size in rec.kinds[kind]:
                sizes = dict(rec.base, **{kind: size})
                args, kw = rec.make(PROBE_BATCH, sizes, use)
                try:
                    torch.manual_seed(0)
                    _forward(model, args, kw)
                    kept[kind].append(size)
                except _Timeout:
                    raise
                except Exception:  # noqa: BLE001
                    pass
            if not kept[kind]:
                kept[kind] = [rec.base[kind]]
        n = max(len(v) for v in kept.values()) if kept else 1
        levels = []
        for i in range(n):
            levels.append({k: v[min(i, len(v) - 1)] for k, v in kept.items()})
        good = []
        for lv in levels:  # the zipped levels, checked together
            args, kw = rec.make(PROBE_BATCH, lv, use)
            try:
                torch.manual_seed(0)
                _forward(model, args, kw)
                good.append(lv)
            except _Timeout:
                raise
            except Exception:  # noqa: BLE001
                pass
        if not good:
            good = [dict(rec.base)]
        out["use"] = use
        out["levels"] = good
        out["recipe"] = recipe_digest(e, model, use, good)
        out["shapes"] = [{"batch": b, "sizes": lv} for lv in good for b in BATCHES]
        out["ok"] = True
    except BaseException as exc:  # noqa: BLE001 - recorded as the model's failure
        if isinstance(exc, KeyboardInterrupt):
            raise
        out["ok"] = False
        out["error"] = f"{stage}: {_short(exc)}"
        out["trace"] = traceback.format_exc()[-1500:]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    out["seconds"] = round(time.perf_counter() - t0, 2)
    return out


# -- the torchvision import shim ------------------------------------------------------------------
def _frozen_batch_norm_2d():
    """torchvision.ops.misc.FrozenBatchNorm2d as published in torchvision 0.29.1 (BSD-3-Clause,
    (c) Soumith Chintala 2016), minus its API-usage logging."""
    import torch
    from torch import Tensor

    class FrozenBatchNorm2d(torch.nn.Module):
        def __init__(self, num_features: int, eps: float = 1e-5):
            super().__init__()
            self.eps = eps
            self.register_buffer("weight", torch.ones(num_features))
            self.register_buffer("bias", torch.zeros(num_features))
            self.register_buffer("running_mean", torch.zeros(num_features))
            self.register_buffer("running_var", torch.ones(num_features))

        def forward(self, x: Tensor) -> Tensor:
            w = self.weight.reshape(1, -1, 1, 1)
            b = self.bias.reshape(1, -1, 1, 1)
            rv = self.running_var.reshape(1, -1, 1, 1)
            rm = self.running_mean.reshape(1, -1, 1, 1)
            scale = w * (rv + self.eps).rsqrt()
            bias = b - rm * scale
            return x * scale + bias

    return FrozenBatchNorm2d


class _MissingMeta(type):
    """Placeholder classes: any attribute is another placeholder, subclassing works,
    instantiating raises."""

    def __getattr__(cls, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _missing(f"{cls.__qualname__}.{name}")


_MISSING: Dict[str, type] = {}


def _missing(qualname: str) -> type:
    if qualname not in _MISSING:
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError(f"{qualname} is a placeholder of the zoo's torchvision import shim "
                               f"(bench/zoo_build.py): torchvision does not import beside this "
                               f"torch, and the zoo runs no data pipeline")

        _MISSING[qualname] = _MissingMeta(qualname.rsplit(".", 1)[-1], (),
                                          {"__init__": __init__, "__qualname__": qualname,
                                           "__module__": qualname.rsplit(".", 1)[0]})
    return _MISSING[qualname]


def _module_getattr(module: str, attr: str):
    if attr.startswith("__"):
        raise AttributeError(f"module {module!r} has no attribute {attr!r}")
    return _missing(f"{module}.{attr}")


class _TorchvisionShim(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """timm imports torchvision (FrozenBatchNorm2d, transforms for its data pipeline); PyPI's
    torchvision does not import beside this torch (``operator torchvision::nms does not
    exist``). Every ``torchvision`` module is a placeholder here, except FrozenBatchNorm2d."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None):
        if fullname == "torchvision" or fullname.startswith("torchvision."):
            return importlib.util.spec_from_loader(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        name = module.__name__
        module.__path__ = []
        module.__getattr__ = functools.partial(_module_getattr, name)  # PEP 562
        if name == "torchvision":
            module.__version__ = "0.0.0+zoo-shim"
        if name == "torchvision.ops.misc":
            module.FrozenBatchNorm2d = _frozen_batch_norm_2d()


def install_torchvision_shim() -> None:
    if not any(isinstance(f, _TorchvisionShim) for f in sys.meta_path):
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _RealTorchvision)]
        _forget_torchvision()
        sys.meta_path.insert(0, _TorchvisionShim())


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="bench/zoo_build.py")
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list")
    ls.add_argument("--lib", action="append")
    pr = sub.add_parser("probe")
    pr.add_argument("names", nargs="+")
    pr.add_argument("-o", "--out", help="append one JSON line per model here (else stdout)")
    pr.add_argument("--budget", type=int, default=120)
    args = p.parse_args(argv)
    if args.command == "list":
        for n in catalogue(args.lib):
            print(n)
        return 0
    import warnings

    warnings.filterwarnings("ignore")
    for name in args.names:
        res = probe(name, args.budget)
        line = json.dumps(res)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        else:
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
