"""bench/zoo.py without replaying: the split is stable, records compact and expand, a record of
other versions is refused, and ``score`` judges findings of a tiny library against tiny
records (the static pass runs; no model is built, nothing compiles)."""

import json
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(REPO, "bench")
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)

import zoo  # noqa: E402

LIB = '''import torch


class Block(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > 4:
            x = x * 2
        n = x.sum().item()
        return x + n


class Other(torch.nn.Module):
    def forward(self, x):
        if x.shape[1] > 8:
            return x * 3
        return x.tolist()
'''


def test_split_is_a_stable_hash_of_the_name():
    # sha256(name)[0] parity: these never change (a model never moves between halves)
    assert zoo.split_of("hf_afmoe", set()) == "tune"
    assert zoo.split_of("hf_albert", set()) == "held-out"
    assert zoo.split_of("hf_albert", {"hf_albert"}) == "tune"  # cited as evidence: tune
    names = [f"m{i}" for i in range(400)]
    share = sum(zoo.split_of(n, set()) == "tune" for n in names) / len(names)
    assert 0.4 < share < 0.6
    # a variant replays its model's code: always its model's half, whatever its own hash says
    variants = [f"{n}__experts_eager" for n in names]
    assert [zoo.split_of(v, set()) for v in variants] == [zoo.split_of(n, set()) for n in names]
    assert zoo.split_of("hf_albert__experts_eager", {"hf_albert"}) == "tune"


def test_forced_tune_names_are_catalogue_names():
    forced = zoo.forced_tune()
    assert {"hf_longformer", "hf_big_bird", "hf_llama", "timm_crossvit"} <= forced
    catalogue = (zoo.load_json(zoo.CATALOGUE_FILE) or {}).get("names")
    if not catalogue:
        pytest.skip("no committed catalogue")
    libs = {zoo.lib_of(n) for n in catalogue}
    unknown = sorted(n for n in forced if zoo.lib_of(n) in libs and n not in catalogue)
    assert not unknown, f"_tune.txt names models the catalogue lacks: {unknown}"


def test_ranges_round_trip():
    lines = [1, 2, 3, 7, 9, 10, 40]
    assert zoo.ranges(lines) == "1-3,7,9-10,40"
    assert zoo.unranges(zoo.ranges(lines)) == set(lines)
    assert zoo.unranges("") == set()


def test_recall_exclusions_are_flags_and_kinds():
    ev = {"kind": "recompile", "detail": "shape-guard"}
    assert zoo.recall_exclusion(ev, ["a/b.py", 3, "own", "shape-guard", 0]) is None
    assert "a call" in zoo.recall_exclusion(ev, ["a/b.py", 3, "caller", "", 0])
    assert "framework" in zoo.recall_exclusion(ev, ["a/b.py", 3, "guard", "shape-guard", 1])
    assert "outside" in zoo.recall_exclusion(ev, ["~torch/nn/x.py", 3, "own", "", 0])
    size_one = {"kind": "recompile", "detail": "size-one"}
    assert "size-one" in zoo.recall_exclusion(size_one, ["a/b.py", 3, "own", "size-one", 0])


def test_compact_event_keeps_every_place_once(tmp_path, monkeypatch):
    monkeypatch.setattr(zoo, "LIBS", str(tmp_path))
    plan = {"shapes": [{"batch": 2, "sizes": {"text": 9}}]}
    src = str(tmp_path / "lib" / "m.py")
    ev = {"kind": "recompile", "detail": "value-guard", "abspath": src, "line": 5,
          "shape": {"batch": 1, "seq_len": 0}, "reason": "n == 4",
          "guards": [{"abspath": src, "line": 5, "guard": "n == 4", "detail": "value-guard"},
                     {"abspath": src, "line": 9, "guard": "m == 2", "detail": "value-guard"}],
          "also": [{"abspath": src, "line": 20}, {"abspath": "/x/site-packages/torch/f.py", "line": 1}]}
    out = zoo.compact_event(ev, plan)
    assert out["at"] == [["lib/m.py", 5, "own", "value-guard", 0],
                         ["lib/m.py", 9, "guard", "value-guard", 0],
                         ["lib/m.py", 20, "caller", "", 0], ["~torch/f.py", 1, "caller", "", 0]]
    assert out["shape"] == "b=2 text=9" and out["guard"] == "n == 4"


@pytest.fixture
def fake_zoo(tmp_path, monkeypatch):
    libs = tmp_path / "zoo-libs"
    (libs / "fakelib").mkdir(parents=True)
    (libs / "fakelib" / "__init__.py").write_text("")
    (libs / "fakelib" / "mod.py").write_text(LIB)
    records = tmp_path / "records"
    monkeypatch.setattr(zoo, "LIBS", str(libs))
    monkeypatch.setattr(zoo, "DOWNLOADS", str(tmp_path))
    monkeypatch.setattr(zoo, "RECORDS", str(records))
    monkeypatch.setattr(zoo, "PIN_FILE", str(records / "_harness.json"))
    monkeypatch.setattr(zoo, "TUNE_FILE", str(records / "_tune.txt"))
    monkeypatch.setattr(zoo, "LIBRARIES", {"fakelib": "1.0"})
    zoo.write_json(str(records / "_harness.json"), {"commit": "0" * 40, "digest": "abc"})
    versions = zoo.current_versions()

    def record(name, **over):
        rec = {"name": name, "lib": zoo.lib_of(name), "versions": versions, "recipe": "r",
               "probe": {"ok": True}, "error": None, "modes": {"auto": {
                   "seconds": 1.0, "compiles": 3, "error": None, "problems": [],
                   "shapes_run": 6, "shapes_failed": 0, "shape_errors": [], "benign": 2,
                   "events": [
                       {"kind": "recompile", "detail": "shape-guard", "shape": "b=8 text=9",
                        "at": [["fakelib/mod.py", 6, "own", "shape-guard", 0]],
                        "reason": "x.size()[0] <= 4"},
                       {"kind": "recompile", "detail": "input-dynamic", "at": [],
                        "reason": "`x` dim 0 changed"},
                       {"kind": "recompile", "detail": "shape-guard",
                        "at": [["fakelib/mod.py", 7, "own", "shape-guard", 1]],
                        "framework": 1, "reason": "s0 < 16"}],
                   "executed": {"fakelib/mod.py": "5-9"}}}}
        rec.update(over)
        zoo.write_json(zoo.record_path(name), rec)

    record("hf_fake_ok")
    record("hf_fake_old", versions=dict(versions, torch="0.0.1"))
    record("hf_fake_broken", error="build: ValueError: no", modes={})
    return versions


def test_score_judges_findings_and_refuses_other_versions(fake_zoo):
    d = zoo.score_data("all", None)
    assert d["models"] == 1
    assert [x["name"] for x in d["stale"]] == ["hf_fake_old"]  # never mixed in
    assert d["failed"] == [{"name": "hf_fake_broken", "error": "build: ValueError: no"}]
    # SL101 on line 6 ran and torch blamed it: true; SL202 on line 8 ran, never blamed: false;
    # the findings of Other.forward (lines 14-16) never ran: unjudged. SL101 is a preview rule:
    # judged per rule (how it earns its way back), left out of the default rules' totals;
    # SL202, a default rule, is counted in them
    assert d["rules"]["SL101"]["true"] >= 1 and d["rules"]["SL202"]["false"] >= 1
    assert d["rules"]["SL101"]["default"] is False and d["rules"]["SL202"]["unjudged"] >= 1
    assert d["rules"]["SL202"]["default"] is True
    rules_false = {f["rule"] for f in d["_falses"]}
    assert "SL101" not in rules_false and "SL202" in rules_false
    assert d["judged"] == d["true"] + d["false"]
    assert d["findings"] == d["judged"] + sum(d["unjudged"].values())
    assert d["judged_share"] == (round(d["judged"] / d["findings"], 3) if d["findings"] else None)
    # recall: line 6 (own, not framework) is the pool; the framework guard on 7 is excluded;
    # only a preview rule flags it
    assert d["blamed_lines"] == 1 and d["direct_recall"] == 0.0
    assert d["direct_recall_with_preview"] == 1.0
    assert d["excluded"]["framework guard (torch's own code)"] == 1
    assert d["excluded"]["benign specialization (a size that never varied)"] == 2
    text = json.dumps(zoo.public(d))
    for key in ("models", "failed", "findings", "judged", "judged_share", "precision", "recall",
                "direct_recall", "rules"):
        assert f'"{key}"' in text


def test_split_filters_records(fake_zoo, monkeypatch):
    monkeypatch.setattr(zoo, "split_of", lambda name, forced=None: "held-out")
    assert zoo.score_data("tune", None)["models"] == 0


def test_failures_are_grouped_by_stage_and_exception():
    assert zoo.error_class("build: ValueError: bad") == "build: ValueError"
    assert zoo.error_class("forward: RuntimeError: no input set runs: text: TypeError: x") == \
        "no input set an eager forward accepts: TypeError"
    assert zoo.error_class("replay (auto): timed out after 240 s") == "replay (auto): timed out"


def test_interleave_takes_each_library_in_turn():
    names = ["hf_a", "hf_b", "hf_c", "timm_x", "tv_y", "timm_z"]
    assert zoo.interleave(names) == ["hf_a", "timm_x", "tv_y", "hf_b", "timm_z", "hf_c"]


def test_a_variant_adds_its_replay_but_not_a_model(fake_zoo):
    zoo.write_json(zoo.record_path("hf_fake_ok__experts_eager"),
                   dict(zoo.load_json(zoo.record_path("hf_fake_ok")),
                        name="hf_fake_ok__experts_eager"))
    d = zoo.score_data("all", None)
    assert d["models"] == 1 and d["variants"] == 1


def test_grid_images_inputs_hold_one_picture_and_video_per_sample():
    """The ``grid_images`` variant's inputs: patch rows grow with the batch, each sample holds
    exactly its picture's and video's media tokens, and the token types mark them."""
    from types import SimpleNamespace

    import torch
    import zoo_build

    vision = SimpleNamespace(spatial_merge_size=2, patch_size=2, temporal_patch_size=2, in_channels=3)
    config = SimpleNamespace(vocab_size=64, vision_config=vision, image_token_id=151655,
                             video_token_id=151656)

    class VisionLanguage:
        def __init__(self) -> None:
            self.config = config

        def forward(self, input_ids=None, attention_mask=None, pixel_values=None,
                    image_grid_thw=None, pixel_values_videos=None, video_grid_thw=None,
                    mm_token_type_ids=None):
            raise AssertionError("not called")

    model = VisionLanguage()
    zoo_build.HF_VARIANTS["grid_images"].apply(model)
    assert (config.image_token_id, config.video_token_id) == (63, 62)
    rec = zoo_build.hf_variant_recipe(model, "fake__grid_images")
    assert rec.options == [["text", "grid-video"], ["text"]]
    assert min(rec.kinds["text"]) >= 14  # four image and eight video tokens fit
    _, kw = rec.make(3, {"text": 16}, ["text", "grid-video"])
    assert kw["pixel_values"].shape == (3 * 16, 3 * 2 * 2 * 2)
    assert kw["pixel_values_videos"].shape == (3 * 2 * 16, 24)
    assert kw["image_grid_thw"].tolist() == [[1, 4, 4]] * 3
    assert ((kw["input_ids"] == 63).sum(1) == 4).all()
    assert ((kw["input_ids"] == 62).sum(1) == 8).all()
    types = kw["mm_token_type_ids"]
    assert torch.equal(types == 1, kw["input_ids"] == 63) and torch.equal(types == 2, kw["input_ids"] == 62)
    _, still = rec.make(2, {"text": 16}, ["text"])
    assert "video_grid_thw" not in still and ((still["input_ids"] >= 62).sum(1) == 4).all()


def test_image_tokens_inputs_hold_as_many_tokens_as_the_tower_makes():
    """The ``image_tokens`` variant counts a picture's tokens with the model's own
    ``get_image_features`` (here 5 rows for a 1-tile layout, none for a plain picture the
    tower refuses), keeps only layouts that count some, grows the text to hold them and puts
    exactly that many image tokens in each sample, beside one picture per sample."""
    from types import SimpleNamespace

    import torch
    import zoo_build

    config = SimpleNamespace(vocab_size=64, image_token_index=7)

    class Llava:
        def __init__(self) -> None:
            self.config = config

        def get_image_features(self, pixel_values, image_sizes=None):
            if pixel_values.dim() != 5:
                raise ValueError("tiles expected")
            return SimpleNamespace(pooler_output=[torch.zeros(5, 8)] * pixel_values.shape[0])

        def forward(self, input_ids=None, attention_mask=None, pixel_values=None, image_sizes=None):
            raise AssertionError("not called")

    def make(batch, sizes, use):  # as the plain recipe: each kind only where used
        kw = {}
        if "text" in use:
            kw["input_ids"] = torch.full((batch, sizes["text"]), 63)  # stray image tokens
            kw["attention_mask"] = torch.ones(batch, sizes["text"])
        if "image" in use:
            kw["pixel_values"] = torch.randn(batch, 3, sizes["image"], sizes["image"])
        return (), kw

    plain = zoo_build.Recipe({"text": [64, 33, 16, 9, 5], "image": [64, 48, 32]},
                             {"text": 16, "image": 32}, make, [["text", "image"]])
    model = Llava()
    zoo_build.HF_VARIANTS["image_tokens"].apply(model)
    assert config.image_token_index == 63
    rec = zoo_build.image_tokens_recipe(model, plain)
    assert rec.options == [["text", "tiles"], ["text", "tiles", "sized"]]
    assert rec.kinds == {"text": [64, 33, 16, 9]}  # five tokens and two of text fit
    _, kw = rec.make(3, {"text": 9}, ["text", "tiles", "sized"])
    assert kw["pixel_values"].shape == (3, 1, 3, 32, 32)
    assert kw["image_sizes"].tolist() == [[32, 32]] * 3
    assert ((kw["input_ids"] == 63).sum(1) == 5).all() and kw["input_ids"].shape == (3, 9)
    _, kw = rec.make(2, {"text": 9}, ["text", "tiles"])
    assert "image_sizes" not in kw and ((kw["input_ids"] == 63).sum(1) == 5).all()


def test_a_record_that_called_numpy_without_it_is_replayed_again(fake_zoo):
    """Replays made before the workers had numpy broke the graph at every ``np.`` call: such a
    record is stale where it executed one, and current where it did not or had numpy."""
    with open(os.path.join(zoo.LIBS, "fakelib", "scaled.py"), "w", encoding="utf-8") as fh:
        fh.write("import numpy as np\n\n\ndef f(x):\n    return x * np.sqrt(2)\n")
    ok = zoo.load_json(zoo.record_path("hf_fake_ok"))
    ok["modes"]["auto"]["executed"]["fakelib/scaled.py"] = "4-5"
    zoo.write_json(zoo.record_path("hf_fake_np"), dict(ok, name="hf_fake_np"))
    zoo.write_json(zoo.record_path("hf_fake_np_ok"), dict(ok, name="hf_fake_np_ok", numpy="2.4.6"))
    stale = {x["name"]: x["why"] for x in zoo.score_data("all", None)["stale"]}
    assert stale == {"hf_fake_old": "versions", "hf_fake_np": "a numpy call replayed without numpy"}
    assert zoo.is_current(zoo.load_json(zoo.record_path("hf_fake_ok")), fake_zoo)


def test_edited_variants_keep_the_plain_inputs_and_add_their_setting():
    """``seqcls_labels``: one label per sample, the text ends with its single end-of-sequence
    token and an encoder-decoder's decoder takes its default; ``half``: floating inputs in
    float16, ids untouched; ``global_attention``: the first token of each text is global."""
    from types import SimpleNamespace

    import torch
    import zoo_build

    config = SimpleNamespace(vocab_size=64, eos_token_id=2, num_labels=3, pad_token_id=None)

    class EncoderDecoder:
        def __init__(self) -> None:
            self.config = config

        def forward(self, input_ids=None, attention_mask=None, decoder_input_ids=None,
                    pixel_values=None, labels=None):
            raise AssertionError("not called")

    model = EncoderDecoder()
    zoo_build.HF_VARIANTS["seqcls_labels"].apply(model)
    assert config.pad_token_id == 0
    _, kw = zoo_build.hf_variant_recipe(model, "fake__seqcls_labels").make(4, {"text": 9}, ["text"])
    assert "decoder_input_ids" not in kw and kw["labels"].shape == (4,)
    assert ((kw["input_ids"] == 2).sum(1) == 1).all() and (kw["input_ids"][:, -1] == 2).all()
    assert set(kw["labels"].tolist()) <= {0, 1, 2}
    _, kw = zoo_build.hf_variant_recipe(model, "fake__half").make(2, {"text": 9, "image": 32},
                                                                  ["text", "image"])
    assert kw["pixel_values"].dtype == torch.float16 and kw["input_ids"].dtype == torch.long
    _, kw = zoo_build.hf_variant_recipe(model, "fake__global_attention").make(3, {"text": 9}, ["text"])
    assert kw["global_attention_mask"].tolist() == [[1] + [0] * 8] * 3


def test_table_counts_only_the_records_finished_when_it_starts(fake_zoo, capsys):
    """A sweep writing records while ``table`` scores its three columns must not make them
    disagree: a record finished after the table started is left out of every column."""
    later = dict(zoo.load_json(zoo.record_path("hf_fake_ok")), name="hf_fake_later",
                 finished="9999-01-01 00:00:00")
    zoo.write_json(zoo.record_path("hf_fake_later"), later)
    assert zoo.score_data("all", None)["models"] == 2  # scored on its own, it counts
    zoo.table(None)
    out = capsys.readouterr().out
    row = next(ln for ln in out.splitlines() if ln.startswith("  | models replayed"))
    assert row.split("|")[-2].strip() == "1", out


def test_diffusers_configs_keep_rotary_axes_summing_to_the_shrunk_head():
    """Flux splits each head into rotary axes, (16, 56, 56) of 128: a shrunk head keeps that
    sum, or every attention fails on shapes and the model never runs."""
    import zoo_build

    class Flux:
        def __init__(self, in_channels=64, attention_head_dim=128, num_attention_heads=24,
                     axes_dims_rope=(16, 56, 56), joint_attention_dim=4096):
            pass

    small = zoo_build.diffusers_kwargs(Flux)
    head = small["attention_head_dim"]
    assert head < 128 and sum(small["axes_dims_rope"]) == head
    assert all(a % 2 == 0 for a in small["axes_dims_rope"])  # each rotary axis takes pairs
    assert isinstance(small["axes_dims_rope"], tuple) and small["joint_attention_dim"] <= 32


def test_shrink_keeps_the_widths_that_tie_layers_together():
    """A vocoder keeps its acoustic model's mel bins, a single ``*_dims`` width follows the
    width it equalled, and (only when asked, after a build refused the plain shrink) a
    depthwise convolution's groups follow its channels."""
    import zoo_build

    tts = {"model_config": {"model_type": "m", "hidden_size": 384, "num_mel_bins": 80},
           "vocoder_config": {"model_type": "v", "model_in_dim": 80, "upsample_initial_channel": 512}}
    small = zoo_build.shrink(tts)
    assert small["vocoder_config"]["model_in_dim"] == small["model_config"]["num_mel_bins"] == 80
    vision = zoo_build.shrink({"mm_embed_dim": 3840, "output_proj_dims": 3840, "patch_size": 16})
    assert vision["output_proj_dims"] == vision["mm_embed_dim"] == 32
    codec = {"hidden_size": 512, "upsample_groups": 512}
    assert zoo_build.shrink(codec)["upsample_groups"] == 512  # builds that work keep their config
    assert zoo_build.shrink(codec, depthwise=True)["upsample_groups"] == 32


def test_shrink_keeps_every_layer_kind_and_fills_sizes_a_checkpoint_sets():
    """Cut to 2 layers, Jamba's attention (every 8th layer from the 4th) and RecurrentGemma's
    (third of a cycle) would vanish and their caches refuse the forward: each kind keeps a
    layer. Sizes the default config leaves None (Ministral's ``head_dim``, ESM's vocabulary)
    are filled only when asked, after the plain shrink did not build."""
    import zoo_build

    jamba = zoo_build.shrink({"num_hidden_layers": 32, "attn_layer_period": 8,
                              "attn_layer_offset": 4, "expert_layer_period": 2,
                              "expert_layer_offset": 1})
    kinds = {i % jamba["attn_layer_period"] == jamba["attn_layer_offset"]
             for i in range(jamba["num_hidden_layers"])}
    assert kinds == {True, False} and jamba["expert_layer_offset"] == 1
    gemma = zoo_build.shrink({"num_hidden_layers": 26,
                              "block_types": ["recurrent", "recurrent", "attention"]})
    assert gemma["num_hidden_layers"] == 3
    unset = {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": None,
             "head_dim": None, "vocab_size": None, "pad_token_id": None, "num_experts": None,
             "ctc_config": {"model_type": "ctc", "vocab_size": 1024, "blank_token_id": 1023}}
    assert zoo_build.shrink(unset)["head_dim"] is None  # builds that work keep their config
    assert zoo_build.shrink(unset)["ctc_config"]["blank_token_id"] == 1023
    filled = zoo_build.shrink(unset, fill_unset=True)
    ctc = filled["ctc_config"]
    assert ctc["blank_token_id"] < ctc["vocab_size"] == zoo_build.VOCAB
    assert filled["head_dim"] * filled["num_attention_heads"] == filled["hidden_size"]
    assert filled["num_key_value_heads"] == filled["num_attention_heads"]
    assert filled["vocab_size"] == zoo_build.VOCAB and filled["pad_token_id"] == 0
    assert filled["num_experts"] == 4


def test_diffusers_channels_widen_only_where_the_shrunk_ones_do_not_build():
    """A block with the library's GroupNorm(32) cannot take 16 channels: the per-block
    channel lists go to multiples of 32, and a list of something else stays."""
    import zoo_build

    wide = zoo_build._wide_channels({"block_out_channels": (16, 32, 48), "layers": [1, 2],
                                     "down_block_types": ("A", "B")})
    assert wide == {"block_out_channels": (32, 64, 96), "layers": [1, 2],
                    "down_block_types": ("A", "B")}


def test_an_exact_multimodal_rotary_split_gets_a_head_wide_enough():
    """GLM-4V splits half of each head's rotary dim into three sections: a shrunk head of 8,
    half of it rotated, is widened so each section keeps a pair; an interleaved rotary code
    (which takes any split) keeps the shrunk head."""
    import zoo_build

    def cfg():
        return {"hidden_size": 32, "num_attention_heads": 4,
                "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.5}}

    exact = cfg()
    zoo_build._mrope_split(exact, exact=True)
    sections = exact["rope_parameters"]["mrope_section"]
    assert exact["head_dim"] == 16 and sum(sections) == 16 // 2 // 2 and min(sections) >= 1
    loose = cfg()
    zoo_build._mrope_split(loose)
    assert "head_dim" not in loose and "mrope_section" not in loose["rope_parameters"]


def test_a_standalone_grid_tower_gets_patch_rows_and_their_grid():
    """A Qwen-VL-style vision tower on its own (``forward(hidden_states, grid_thw)``) gets one
    picture per sample as patch rows, tried after the plain input sets (it has none), the
    side a multiple of the spatial merge."""
    from types import SimpleNamespace

    import zoo_build

    class Tower:
        config = SimpleNamespace(spatial_merge_size=2, patch_size=2, temporal_patch_size=2,
                                 in_channels=3)

        def forward(self, hidden_states, grid_thw, **kwargs):
            raise AssertionError("not called")

    rec = zoo_build.hf_recipe(Tower())
    assert rec.options == [["grid"]] and rec.kinds["grid"] == [8, 6, 4] and rec.base["grid"] == 4
    _, kw = rec.make(3, {"grid": 6}, ["grid"])
    assert kw["hidden_states"].shape == (3 * 36, 3 * 2 * 2 * 2)
    assert kw["grid_thw"].tolist() == [[1, 6, 6]] * 3


def test_packed_pictures_lay_each_patch_side_by_side():
    """MiniCPM-V's packer: (1, channels, patch, patches x patch), each picture's patch grid in
    ``target_sizes``; the first patch of the strip is the first picture's top-left patch."""
    import torch
    import zoo_build

    pixels = torch.randn(2, 3, 8, 8)
    kw = zoo_build._packed_pictures(pixels, 4)
    assert kw["pixel_values"].shape == (1, 3, 4, 2 * 4 * 4)
    assert kw["target_sizes"].tolist() == [[2, 2], [2, 2]]
    assert torch.equal(kw["pixel_values"][0, :, :, :4], pixels[0, :, :4, :4])
    assert torch.equal(kw["pixel_values"][0, :, :, 4:8], pixels[0, :, :4, 4:8])
    assert torch.equal(kw["pixel_values"][0, :, :, 16:20], pixels[1, :, :4, :4])
