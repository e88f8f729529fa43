"""The former hand-picked zoo (51 models configured one by one). ``bench/zoo.py`` no longer
scores it: its models are built mechanically by ``bench/zoo_build.py`` (issue 18), and these 51
are all in the ``tune`` half (``bench/zoo_records/_tune.txt``). Kept as ``shapelint run``
targets for the README's remedy example and for the torchvision import shim that
tests/user_models imports from here.

Real models of transformers 5.23.0, diffusers 0.42.1 and timm 1.0.31 with tiny configs and
random weights, as ``shapelint run`` targets.

Each entry is a harness target. From the repository root, for example::

    shapelint run --model bench/zoo_models.py:ZOO.llama.build \\
                  --inputs bench/zoo_models.py:ZOO.llama.inputs --batch-sizes 1,2,3 --seq-lens 5,9

``python bench/zoo.py targets`` prints every entry as a ``[[targets]]`` table. The libraries are
fetched by ``python bench/zoo.py fetch`` (``replay`` does it too) into ``bench/_downloads``;
importing this module puts them on ``sys.path`` (after the venv's own packages, so torch and
everything torch imports stay the venv's).

- No hub downloads ever: every model is built from a config object, weights are random (the
  harness seeds each shape's inputs; a factory seeds its weights), in eval mode.
- ``inputs(batch, seq_len)`` builds the forward's arguments. ``seq_len`` is what the entry sweeps
  besides the batch: tokens for text, the image side for vision models that take any resolution,
  audio samples for Wav2Vec2, latent tokens or latent side for diffusion models, frames for video.
  Entries with a fixed resolution sweep the batch only (``seqs = None``).
- ``dims`` names, per forward argument, which dims the sweep varies: it becomes the static
  pass's ``dynamic-dims`` in ``bench/zoo.py score``.

timm and torchvision: timm's model code imports ``torchvision.ops.misc.FrozenBatchNorm2d`` and,
through ``timm.data`` (which ``timm.models`` imports for its constants), torchvision's
transforms and datasets. PyPI's torchvision does not import beside torch 2.13 (``RuntimeError:
operator torchvision::nms does not exist``: its compiled ops target another torch). So timm
entries install an import shim (``_TorchvisionShim``) in their worker process before importing
timm: ``FrozenBatchNorm2d`` is torchvision's own code (BSD-3-Clause, copied below, used only by
timm's batch-norm freezing helpers, never by these models), and every other torchvision name
is a placeholder class that raises if anything instantiates it. Only data-pipeline code
(transforms, datasets) touches those names, and the zoo never runs it, so timm's model code
runs exactly as published. transformers and diffusers entries never see the shim.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
DOWNLOADS = os.path.join(HERE, "_downloads")
LIBS = os.path.join(DOWNLOADS, "zoo-libs")  # transformers, diffusers, timm (pinned, no deps)
SITE = os.path.join(DOWNLOADS, "zoo-site")  # their runtime dependencies (never torch)

for _p in (LIBS, SITE):  # after the venv: the venv's torch, sympy, typing_extensions win
    if _p not in sys.path:
        sys.path.append(_p)

TEXT_BATCHES = [1, 2, 3, 4, 8]
TEXT_SEQS = [5, 9, 16, 33]  # 16: a multiple of 2, 4, 8 (pad-to-multiple branches flip)
VOCAB = 128


@dataclass
class Entry:
    """One zoo model: ``build()`` (the factory) and ``inputs(batch, seq_len)`` for the harness."""

    name: str
    lib: str  # transformers | diffusers | timm
    kind: str  # decoder, encoder, ... (for the report)
    factory: Callable[[], Any]
    make_inputs: Callable[..., Any]
    dims: Dict[str, List[int]]
    batches: List[int] = field(default_factory=lambda: list(TEXT_BATCHES))
    seqs: Optional[List[int]] = field(default_factory=lambda: list(TEXT_SEQS))
    note: str = ""
    timeout: float = 600.0

    def build(self):
        import torch

        if self.lib == "timm":
            install_torchvision_shim()
        torch.manual_seed(0)
        model = self.factory()
        model.eval()
        return model

    def inputs(self, batch: int, seq_len: Optional[int] = None):
        return self.make_inputs(batch, seq_len)


class _Zoo:
    """``ZOO.<name>``: the entries by name (so ``zoo_models.py:ZOO.gpt2.build`` resolves)."""

    def __init__(self) -> None:
        self._entries: Dict[str, Entry] = {}

    def add(self, entry: Entry) -> None:
        if entry.name in self._entries:
            raise ValueError(f"duplicate zoo entry {entry.name}")
        self._entries[entry.name] = entry
        setattr(self, entry.name, entry)

    def entries(self) -> List[Entry]:
        return list(self._entries.values())


ZOO = _Zoo()


def entry(name: str, lib: str, kind: str, inputs: Callable[..., Any], dims: Dict[str, List[int]],
          **kw: Any) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    def deco(factory: Callable[[], Any]) -> Callable[[], Any]:
        ZOO.add(Entry(name, lib, kind, factory, inputs, dims, **kw))
        return factory

    return deco


# -- inputs ---------------------------------------------------------------------------------------
def _ids(batch: int, seq: int, vocab: int = VOCAB):
    import torch

    return torch.randint(3, vocab, (batch, seq))


def causal_lm(batch: int, seq_len: int):
    import torch

    ids = _ids(batch, seq_len)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def ids_only(batch: int, seq_len: int):
    return {"input_ids": _ids(batch, seq_len)}


def bert_like(batch: int, seq_len: int):
    import torch

    ids = _ids(batch, seq_len)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids),
            "token_type_ids": torch.zeros_like(ids)}


def seq2seq(batch: int, seq_len: int):
    import torch

    ids = _ids(batch, seq_len)
    dec = _ids(batch, max(2, seq_len // 2 + 1))
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "decoder_input_ids": dec}


def image(channels: int = 3, fixed: Optional[int] = None, **extra: Any):
    def make(batch: int, seq_len: Optional[int] = None):
        import torch

        side = fixed or seq_len
        return dict({"pixel_values": torch.randn(batch, channels, side, side)}, **extra)

    return make


def timm_image(fixed: Optional[int] = None):
    def make(batch: int, seq_len: Optional[int] = None):
        import torch

        side = fixed or seq_len
        return (torch.randn(batch, 3, side, side),)

    return make


TEXT_DIMS = {"input_ids": [0, 1], "attention_mask": [0, 1]}
BERT_DIMS = dict(TEXT_DIMS, token_type_ids=[0, 1])
S2S_DIMS = dict(TEXT_DIMS, decoder_input_ids=[0, 1])
IMAGE_BATCHES = [1, 2, 3, 4, 8]
SIDES = [32, 48, 64]


def _decoder(**over: Any) -> Dict[str, Any]:
    cfg = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
               pad_token_id=0, bos_token_id=1, eos_token_id=2)
    cfg.update(over)
    return cfg


# -- transformers: decoders -----------------------------------------------------------------------
@entry("gpt2", "transformers", "decoder", causal_lm, TEXT_DIMS)
def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4,
                                      n_positions=128))


@entry("llama", "transformers", "decoder", causal_lm, TEXT_DIMS)
def llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(**_decoder()))


@entry("mistral", "transformers", "decoder, sliding window 8", causal_lm, TEXT_DIMS)
def mistral():
    from transformers import MistralConfig, MistralForCausalLM

    return MistralForCausalLM(MistralConfig(**_decoder(sliding_window=8)))


@entry("qwen2", "transformers", "decoder, sliding window 8 on layer 1", causal_lm, TEXT_DIMS)
def qwen2():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    return Qwen2ForCausalLM(Qwen2Config(**_decoder(use_sliding_window=True, sliding_window=8,
                                                   max_window_layers=1)))


@entry("qwen3", "transformers", "decoder (q/k norm)", causal_lm, TEXT_DIMS)
def qwen3():
    from transformers import Qwen3Config, Qwen3ForCausalLM

    return Qwen3ForCausalLM(Qwen3Config(**_decoder(head_dim=8)))


@entry("gemma", "transformers", "decoder", causal_lm, TEXT_DIMS)
def gemma():
    from transformers import GemmaConfig, GemmaForCausalLM

    return GemmaForCausalLM(GemmaConfig(**_decoder(head_dim=8)))


@entry("gemma3", "transformers", "decoder, sliding/global layers (window 8)", causal_lm, TEXT_DIMS)
def gemma3():
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    return Gemma3ForCausalLM(Gemma3TextConfig(**_decoder(
        head_dim=8, sliding_window=8, layer_types=["sliding_attention", "full_attention"])))


@entry("phi3", "transformers", "decoder", causal_lm, TEXT_DIMS)
def phi3():
    from transformers import Phi3Config, Phi3ForCausalLM

    return Phi3ForCausalLM(Phi3Config(**_decoder()))


@entry("gpt_neox", "transformers", "decoder (partial rotary)", causal_lm, TEXT_DIMS)
def gpt_neox():
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    return GPTNeoXForCausalLM(GPTNeoXConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                                            num_hidden_layers=2, num_attention_heads=4,
                                            max_position_embeddings=128, rotary_pct=0.5))


@entry("gptj", "transformers", "decoder (rotary_dim)", causal_lm, TEXT_DIMS)
def gptj():
    from transformers import GPTJConfig, GPTJForCausalLM

    return GPTJForCausalLM(GPTJConfig(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4,
                                      rotary_dim=4, n_positions=128))


@entry("opt", "transformers", "decoder (learned positions)", causal_lm, TEXT_DIMS)
def opt():
    from transformers import OPTConfig, OPTForCausalLM

    return OPTForCausalLM(OPTConfig(vocab_size=VOCAB, hidden_size=32, ffn_dim=64,
                                    word_embed_proj_dim=32, num_hidden_layers=2,
                                    num_attention_heads=4, max_position_embeddings=128))


@entry("falcon", "transformers", "decoder (new architecture, rotary)", causal_lm, TEXT_DIMS)
def falcon():
    from transformers import FalconConfig, FalconForCausalLM

    return FalconForCausalLM(FalconConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                          num_attention_heads=4, num_kv_heads=2,
                                          new_decoder_architecture=True, alibi=False,
                                          max_position_embeddings=128))


@entry("bloom", "transformers", "decoder (ALiBi)", causal_lm, TEXT_DIMS)
def bloom():
    from transformers import BloomConfig, BloomForCausalLM

    return BloomForCausalLM(BloomConfig(vocab_size=VOCAB, hidden_size=32, n_layer=2, n_head=4))


@entry("starcoder2", "transformers", "decoder, sliding window 8", causal_lm, TEXT_DIMS)
def starcoder2():
    from transformers import Starcoder2Config, Starcoder2ForCausalLM

    return Starcoder2ForCausalLM(Starcoder2Config(**_decoder(sliding_window=8)))


# -- transformers: MoE and SSM --------------------------------------------------------------------
@entry("mixtral", "transformers", "MoE decoder, 4 experts top-2, sliding window 8", causal_lm,
       TEXT_DIMS)
def mixtral():
    from transformers import MixtralConfig, MixtralForCausalLM

    return MixtralForCausalLM(MixtralConfig(**_decoder(num_local_experts=4, num_experts_per_tok=2,
                                                       sliding_window=8)))


@entry("qwen2_moe", "transformers", "MoE decoder with shared expert", causal_lm, TEXT_DIMS)
def qwen2_moe():
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM

    return Qwen2MoeForCausalLM(Qwen2MoeConfig(**_decoder(
        num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
        shared_expert_intermediate_size=32, decoder_sparse_step=1)))


@entry("olmoe", "transformers", "MoE decoder, 4 experts top-2", causal_lm, TEXT_DIMS)
def olmoe():
    from transformers import OlmoeConfig, OlmoeForCausalLM

    return OlmoeForCausalLM(OlmoeConfig(**_decoder(num_experts=4, num_experts_per_tok=2)))


@entry("mamba", "transformers", "SSM (torch path, no CUDA kernels)", ids_only,
       {"input_ids": [0, 1]}, seqs=[5, 9, 17])
def mamba():
    from transformers import MambaConfig, MambaForCausalLM

    return MambaForCausalLM(MambaConfig(vocab_size=VOCAB, hidden_size=32, state_size=8,
                                        num_hidden_layers=2, expand=2, conv_kernel=4,
                                        use_cache=False))


# -- transformers: encoders -----------------------------------------------------------------------
def _bert_cfg(**over: Any) -> Dict[str, Any]:
    cfg = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=128, type_vocab_size=2)
    cfg.update(over)
    return cfg


@entry("bert", "transformers", "encoder", bert_like, BERT_DIMS)
def bert():
    from transformers import BertConfig, BertModel

    return BertModel(BertConfig(**_bert_cfg()))


@entry("roberta", "transformers", "encoder (positions from padding)", causal_lm, TEXT_DIMS)
def roberta():
    from transformers import RobertaConfig, RobertaModel

    return RobertaModel(RobertaConfig(**_bert_cfg(pad_token_id=1, max_position_embeddings=130)))


@entry("distilbert", "transformers", "encoder", causal_lm, TEXT_DIMS)
def distilbert():
    from transformers import DistilBertConfig, DistilBertModel

    return DistilBertModel(DistilBertConfig(vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4,
                                            hidden_dim=64, max_position_embeddings=128))


@entry("deberta_v2", "transformers", "encoder (relative positions)", bert_like, BERT_DIMS)
def deberta_v2():
    from transformers import DebertaV2Config, DebertaV2Model

    return DebertaV2Model(DebertaV2Config(**_bert_cfg(relative_attention=True,
                                                      position_buckets=16, max_relative_positions=32,
                                                      pos_att_type=["p2c", "c2p"])))


@entry("modernbert", "transformers", "encoder, local/global attention (window 8)", causal_lm,
       TEXT_DIMS)
def modernbert():
    from transformers import ModernBertConfig, ModernBertModel

    return ModernBertModel(ModernBertConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                                            num_hidden_layers=2, num_attention_heads=4,
                                            local_attention=8, global_attn_every_n_layers=2,
                                            max_position_embeddings=128, pad_token_id=0))


@entry("electra", "transformers", "encoder (embedding projection)", bert_like, BERT_DIMS)
def electra():
    from transformers import ElectraConfig, ElectraModel

    return ElectraModel(ElectraConfig(**_bert_cfg(embedding_size=16)))


@entry("longformer", "transformers", "long-context encoder (window 4, pads to it)", causal_lm,
       TEXT_DIMS, seqs=[5, 6, 9, 16, 33])  # 6 pads by 2, 5/9/33 by 3: padding_len differs
def longformer():
    from transformers import LongformerConfig, LongformerModel

    return LongformerModel(LongformerConfig(**_bert_cfg(attention_window=[4, 4], pad_token_id=1,
                                                        max_position_embeddings=160)))


@entry("big_bird", "transformers", "long-context encoder, block sparse (block 4)", causal_lm,
       TEXT_DIMS, seqs=[9, 64, 67])  # block sparse (and its padding) only past 36 tokens
def big_bird():
    from transformers import BigBirdConfig, BigBirdModel

    return BigBirdModel(BigBirdConfig(**_bert_cfg(attention_type="block_sparse", block_size=4,
                                                  num_random_blocks=2)))


# -- transformers: encoder-decoders ---------------------------------------------------------------
@entry("t5", "transformers", "encoder-decoder (relative position buckets)", seq2seq, S2S_DIMS)
def t5():
    from transformers import T5Config, T5ForConditionalGeneration

    return T5ForConditionalGeneration(T5Config(vocab_size=VOCAB, d_model=32, d_ff=64, d_kv=8,
                                               num_layers=2, num_decoder_layers=2, num_heads=4,
                                               decoder_start_token_id=0))


@entry("bart", "transformers", "encoder-decoder", seq2seq, S2S_DIMS)
def bart():
    from transformers import BartConfig, BartForConditionalGeneration

    return BartForConditionalGeneration(BartConfig(
        vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
        max_position_embeddings=128))


# -- transformers: vision -------------------------------------------------------------------------
@entry("vit", "transformers", "vision, interpolated position embeddings",
       image(interpolate_pos_encoding=True), {"pixel_values": [0, 2, 3]},
       batches=IMAGE_BATCHES, seqs=SIDES)
def vit():
    from transformers import ViTConfig, ViTModel

    return ViTModel(ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
                              num_attention_heads=4, intermediate_size=64))


@entry("clip_vision", "transformers", "vision, interpolated position embeddings",
       image(interpolate_pos_encoding=True), {"pixel_values": [0, 2, 3]},
       batches=IMAGE_BATCHES, seqs=SIDES)
def clip_vision():
    from transformers import CLIPVisionConfig, CLIPVisionModel

    return CLIPVisionModel(CLIPVisionConfig(image_size=32, patch_size=8, hidden_size=32,
                                            num_hidden_layers=2, num_attention_heads=4,
                                            intermediate_size=64))


@entry("dinov2", "transformers", "vision, always interpolates positions", image(),
       {"pixel_values": [0, 2, 3]}, batches=IMAGE_BATCHES, seqs=SIDES)
def dinov2():
    from transformers import Dinov2Config, Dinov2Model

    return Dinov2Model(Dinov2Config(image_size=32, patch_size=8, hidden_size=32,
                                    num_hidden_layers=2, num_attention_heads=4, mlp_ratio=2))


@entry("swin", "transformers", "vision, shifted windows of 4 (fixed resolution: each compile "
       "at a dynamic side took 100-300 s)", image(fixed=32), {"pixel_values": [0]},
       batches=IMAGE_BATCHES, seqs=None)
def swin():
    from transformers import SwinConfig, SwinModel

    return SwinModel(SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1],
                                num_heads=[2, 2], window_size=4))


# -- transformers: audio --------------------------------------------------------------------------
def whisper_inputs(batch: int, seq_len: int):
    import torch

    # the encoder takes exactly 2 * max_source_positions frames: only the decoder length varies
    return {"input_features": torch.randn(batch, 8, 32), "decoder_input_ids": _ids(batch, seq_len)}


@entry("whisper", "transformers", "speech encoder-decoder", whisper_inputs,
       {"input_features": [0], "decoder_input_ids": [0, 1]})
def whisper():
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    return WhisperForConditionalGeneration(WhisperConfig(
        vocab_size=VOCAB, num_mel_bins=8, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
        decoder_ffn_dim=64, max_source_positions=16, max_target_positions=64,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1))


def audio_inputs(batch: int, seq_len: int):
    import torch

    return {"input_values": torch.randn(batch, seq_len)}


@entry("wav2vec2", "transformers", "speech encoder (conv feature extractor)", audio_inputs,
       {"input_values": [0, 1]}, seqs=[200, 400, 800])
def wav2vec2():
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    return Wav2Vec2Model(Wav2Vec2Config(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
        num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, mask_time_prob=0.0))


# -- timm -----------------------------------------------------------------------------------------
def _timm(name: str, **kw: Any):
    import timm

    return timm.create_model(name, pretrained=False, num_classes=10, **kw)


@entry("timm_resnet18", "timm", "convnet", timm_image(), {"x": [0, 2, 3]},
       batches=IMAGE_BATCHES, seqs=SIDES)
def timm_resnet18():
    return _timm("resnet18")


@entry("timm_convnext_atto", "timm", "convnet (LayerNorm2d)", timm_image(), {"x": [0, 2, 3]},
       batches=IMAGE_BATCHES, seqs=SIDES)
def timm_convnext_atto():
    return _timm("convnext_atto")


@entry("timm_efficientnet_b0", "timm", "convnet (depthwise, SE)", timm_image(), {"x": [0, 2, 3]},
       batches=IMAGE_BATCHES, seqs=SIDES)
def timm_efficientnet_b0():
    return _timm("efficientnet_b0")


@entry("timm_mobilenetv3", "timm", "convnet (hard-swish, SE)", timm_image(), {"x": [0, 2, 3]},
       batches=IMAGE_BATCHES, seqs=SIDES)
def timm_mobilenetv3():
    return _timm("mobilenetv3_small_050")


@entry("timm_regnet", "timm", "convnet (grouped)", timm_image(), {"x": [0, 2, 3]},
       batches=IMAGE_BATCHES, seqs=SIDES)
def timm_regnet():
    return _timm("regnetx_002")


@entry("timm_vit_dynamic", "timm", "ViT with dynamic_img_size (resamples positions)", timm_image(),
       {"x": [0, 2, 3]}, batches=IMAGE_BATCHES, seqs=SIDES)
def timm_vit_dynamic():
    return _timm("vit_tiny_patch16_224", img_size=32, patch_size=8, depth=2, embed_dim=32,
                 num_heads=2, dynamic_img_size=True)


@entry("timm_deit", "timm", "DeiT with distillation token (fixed resolution)", timm_image(32),
       {"x": [0]}, batches=IMAGE_BATCHES, seqs=None)
def timm_deit():
    return _timm("deit_tiny_distilled_patch16_224", img_size=32, patch_size=8, depth=2,
                 embed_dim=32, num_heads=2)


@entry("timm_crossvit", "timm", "CrossViT (two branches, resizes its input to each)", timm_image(),
       {"x": [0, 2, 3]}, batches=IMAGE_BATCHES, seqs=[240, 224])
def timm_crossvit():
    return _timm("crossvit_tiny_240", depth=[[1, 1, 0], [1, 1, 0]])


@entry("timm_eva02", "timm", "EVA-02 (rotary, dynamic_img_size)", timm_image(), {"x": [0, 2, 3]},
       batches=IMAGE_BATCHES, seqs=[28, 42, 56])
def timm_eva02():
    return _timm("eva02_tiny_patch14_224", img_size=28, depth=2, embed_dim=32, num_heads=2,
                 dynamic_img_size=True)


@entry("timm_swin", "timm", "Swin (strict_img_size off, pads to windows)", timm_image(),
       {"x": [0, 2, 3]}, batches=IMAGE_BATCHES, seqs=[32, 64])
def timm_swin():
    return _timm("swin_tiny_patch4_window7_224", img_size=32, window_size=4, embed_dim=16,
                 depths=(1, 1), num_heads=(2, 2), strict_img_size=False)


# -- diffusers ------------------------------------------------------------------------------------
def _timesteps(batch: int):
    import torch

    return torch.randint(0, 1000, (batch,))


def unet2d_inputs(batch: int, seq_len: int):
    import torch

    return {"sample": torch.randn(batch, 3, seq_len, seq_len), "timestep": _timesteps(batch)}


@entry("unet2d", "diffusers", "UNet2DModel (attention blocks)", unet2d_inputs,
       {"sample": [0, 2, 3], "timestep": [0]}, batches=IMAGE_BATCHES, seqs=[16, 32, 48])
def unet2d():
    from diffusers import UNet2DModel

    return UNet2DModel(sample_size=32, in_channels=3, out_channels=3, layers_per_block=1,
                       block_out_channels=(32, 64), norm_num_groups=8, attention_head_dim=8,
                       down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                       up_block_types=("AttnUpBlock2D", "UpBlock2D"))


def unet_cond_inputs(batch: int, seq_len: int):
    import torch

    return {"sample": torch.randn(batch, 4, seq_len, seq_len), "timestep": _timesteps(batch),
            "encoder_hidden_states": torch.randn(batch, 7, 32)}


@entry("unet2d_condition", "diffusers", "UNet2DConditionModel (cross-attention)", unet_cond_inputs,
       {"sample": [0, 2, 3], "timestep": [0], "encoder_hidden_states": [0]},
       batches=IMAGE_BATCHES, seqs=[16, 17, 24, 32])
def unet2d_condition():
    from diffusers import UNet2DConditionModel

    return UNet2DConditionModel(
        sample_size=16, in_channels=4, out_channels=4, layers_per_block=1,
        block_out_channels=(32, 64), norm_num_groups=8, cross_attention_dim=32,
        attention_head_dim=8, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))


def unet3d_inputs(batch: int, seq_len: int):
    import torch

    return {"sample": torch.randn(batch, 4, seq_len, 16, 16), "timestep": _timesteps(batch),
            "encoder_hidden_states": torch.randn(batch, 7, 32)}


@entry("unet3d_condition", "diffusers", "UNet3DConditionModel (video; seq_len = frames)",
       unet3d_inputs, {"sample": [0, 2], "timestep": [0], "encoder_hidden_states": [0]},
       batches=[1, 2, 3, 4], seqs=[2, 3, 5])
def unet3d_condition():
    from diffusers import UNet3DConditionModel

    return UNet3DConditionModel(
        sample_size=16, in_channels=4, out_channels=4, layers_per_block=1,
        block_out_channels=(32, 64), norm_num_groups=8, cross_attention_dim=32,
        attention_head_dim=8, down_block_types=("CrossAttnDownBlock3D", "DownBlock3D"),
        up_block_types=("UpBlock3D", "CrossAttnUpBlock3D"))


def dit_inputs(batch: int, seq_len: int):
    import torch

    return {"hidden_states": torch.randn(batch, 4, seq_len, seq_len), "timestep": _timesteps(batch),
            "class_labels": torch.randint(0, 10, (batch,))}


@entry("dit", "diffusers", "DiTTransformer2DModel (position table rebuilt per latent side)",
       dit_inputs, {"hidden_states": [0, 2, 3], "timestep": [0], "class_labels": [0]},
       batches=IMAGE_BATCHES, seqs=[8, 12, 16])
def dit():
    from diffusers import DiTTransformer2DModel

    return DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=16, in_channels=4,
                                 out_channels=4, num_layers=2, sample_size=8, patch_size=2,
                                 num_embeds_ada_norm=10, norm_num_groups=8)


def sd3_inputs(batch: int, seq_len: int):
    import torch

    return {"hidden_states": torch.randn(batch, 4, seq_len, seq_len),
            "encoder_hidden_states": torch.randn(batch, 7, 32),
            "pooled_projections": torch.randn(batch, 16), "timestep": _timesteps(batch)}


@entry("sd3_transformer", "diffusers", "SD3Transformer2DModel (cropped position table)",
       sd3_inputs, {"hidden_states": [0, 2, 3], "encoder_hidden_states": [0],
                    "pooled_projections": [0], "timestep": [0]},
       batches=IMAGE_BATCHES, seqs=[8, 12, 16])
def sd3_transformer():
    from diffusers import SD3Transformer2DModel

    return SD3Transformer2DModel(sample_size=8, patch_size=2, in_channels=4, num_layers=2,
                                 attention_head_dim=8, num_attention_heads=4,
                                 joint_attention_dim=32, caption_projection_dim=32,
                                 pooled_projection_dim=16, out_channels=4, pos_embed_max_size=16)


def flux_inputs(batch: int, seq_len: int):
    import torch

    return {"hidden_states": torch.randn(batch, seq_len, 16),
            "encoder_hidden_states": torch.randn(batch, 7, 32),
            "pooled_projections": torch.randn(batch, 16), "timestep": torch.rand(batch),
            "img_ids": torch.zeros(seq_len, 3), "txt_ids": torch.zeros(7, 3)}


@entry("flux_transformer", "diffusers", "FluxTransformer2DModel (packed latent tokens)",
       flux_inputs, {"hidden_states": [0, 1], "encoder_hidden_states": [0],
                     "pooled_projections": [0], "timestep": [0], "img_ids": [0]},
       batches=IMAGE_BATCHES, seqs=[12, 36, 64])  # never 16, the channels (duck sizing)
def flux_transformer():
    from diffusers import FluxTransformer2DModel

    return FluxTransformer2DModel(patch_size=1, in_channels=16, num_layers=1, num_single_layers=1,
                                  attention_head_dim=8, num_attention_heads=2,
                                  joint_attention_dim=32, pooled_projection_dim=16,
                                  axes_dims_rope=(2, 2, 4))


def vae_inputs(batch: int, seq_len: int):
    import torch

    return {"sample": torch.randn(batch, 3, seq_len, seq_len)}


@entry("autoencoder_kl", "diffusers", "AutoencoderKL (encode + decode)", vae_inputs,
       {"sample": [0, 2, 3]}, batches=IMAGE_BATCHES, seqs=[16, 32, 48])
def autoencoder_kl():
    from diffusers import AutoencoderKL

    return AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, norm_num_groups=8,
                         block_out_channels=(16, 32), sample_size=32,
                         down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
                         up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"))


# -- the torchvision import shim for timm: one home, bench/zoo_build.py -------------------------
def install_torchvision_shim() -> None:
    """Serve timm's imports of torchvision (``FrozenBatchNorm2d``, constants) without
    torchvision, which does not import beside this torch: ``zoo_build``'s shim, loaded once."""
    build = sys.modules.get("zoo_build")
    if build is None:
        spec = importlib.util.spec_from_file_location("zoo_build", os.path.join(HERE, "zoo_build.py"))
        assert spec is not None and spec.loader is not None
        build = importlib.util.module_from_spec(spec)
        sys.modules["zoo_build"] = build
        spec.loader.exec_module(build)
    build.install_torchvision_shim()
