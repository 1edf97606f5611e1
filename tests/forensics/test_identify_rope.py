"""identify_rope on 2-D and 3-D RoPE cos/sin tables: built by the sources' own code where installed
(diffusers 0.42.1: FluxPosEmbed, HunyuanVideo's, Wan's and CogVideoX's rotary; transformers 5.23:
Qwen2-VL's M-RoPE, Qwen3-VL's interleaved M-RoPE, Pixtral's and Qwen2-VL's vision rotary), and by
posenc's own functions at several shapes. It must name the rule, its split, base and layout, read the
positions each token was given, and answer "not a RoPE table I can reproduce" for anything else.
"""

import importlib.util

import numpy as np
import pytest

import posenc
from pixel_references import rotary_embedding_torch_reference, timm_rotary_reference
from posenc.rope import axial as rg

needs_sources = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in ("torch", "diffusers", "transformers")),
    reason="needs torch, diffusers and transformers (the conventions extra)")


def thw_ids(frames, height, width):
    """(frames * height * width, 3) ids (t, row, column), frame outermost, row by row."""
    grids = np.meshgrid(np.arange(frames), np.arange(height), np.arange(width), indexing="ij")
    return np.stack([g.reshape(-1) for g in grids], -1)


def found_as(cos, sin, fragment, positions=None, **given):
    """identify_rope from cos and sin, from cos alone and from sin alone; each must name ``fragment``
    (and read ``positions``, ``(axes, tokens)``); returns the answer from both."""
    cos, sin = (np.asarray(x.detach() if hasattr(x, "detach") else x, np.float32) for x in (cos, sin))
    answers = {"both": posenc.identify_rope(cos, sin), "cos": posenc.identify_rope(cos),
               "sin": posenc.identify_rope(sin=sin)}
    for what, found in answers.items():
        if what not in given.get("only", answers):
            continue
        assert any(fragment in match for match in found.matches), f"from {what}: {found}"
        assert found.max_deviation <= found.tolerance
        if positions is not None:
            np.testing.assert_array_equal(found.positions, positions)
    return answers["both"]


# --- the sources' own code --------------------------------------------------------------------


@needs_sources
@pytest.mark.parametrize(("text", "height", "width"), [(0, 3, 5), (6, 5, 3), (512, 16, 16), (7, 2, 9)])
@pytest.mark.parametrize("axes_dim", [(16, 56, 56), (8, 12, 12), (8, 20, 4)])
def test_flux(text, height, width, axes_dim):
    import torch
    from diffusers.models.transformers.transformer_flux import FluxPosEmbed

    ids = rg.flux_position_ids(text, height, width)
    cos, sin = FluxPosEmbed(theta=10000, axes_dim=list(axes_dim))(torch.from_numpy(ids).float())
    found = found_as(cos, sin, f"per-axis, axes_dim={axes_dim}, base=10000, layout='interleaved'", ids.T)
    assert found.sources[0].startswith("diffusers' get_1d_rotary_pos_embed per axis (Flux's FluxPosEmbed")
    rebuilt = posenc.rope.per_axis_cos_sin(found.positions.T, axes_dim)
    assert found.call == f"posenc.rope.per_axis_cos_sin(positions.T, {axes_dim}, base=10000.0, layout='interleaved')"
    np.testing.assert_allclose(rebuilt[0], cos.numpy(), atol=2**-23)
    if text == 6:
        # one row: the height is 0 like the time, and two axes at zero read as one (the same numbers)
        ids = rg.flux_position_ids(text, 1, width)
        cos, sin = FluxPosEmbed(theta=10000, axes_dim=list(axes_dim))(torch.from_numpy(ids).float())
        zero = axes_dim[0] + axes_dim[1]
        found_as(cos, sin, f"per-axis, axes_dim={(zero, axes_dim[2])}, base=10000", np.stack([ids[:, 0], ids[:, 2]]),
                 only=("both",))


@needs_sources
@pytest.mark.parametrize(("frames", "height", "width"), [(3, 4, 6), (2, 5, 3)])
@pytest.mark.parametrize("rope_dim", [(16, 56, 56), (8, 28, 28)])
def test_hunyuan_video(frames, height, width, rope_dim):
    import torch
    from diffusers.models.transformers.transformer_hunyuan_video import HunyuanVideoRotaryPosEmbed

    module = HunyuanVideoRotaryPosEmbed(patch_size=2, patch_size_t=1, rope_dim=list(rope_dim), theta=256.0)
    cos, sin = module(torch.zeros(1, 4, frames, 2 * height, 2 * width))
    found_as(cos, sin, f"per-axis, axes_dim={rope_dim}, base=256", thw_ids(frames, height, width).T)


@needs_sources
@pytest.mark.parametrize("head_dim", [128, 64])
def test_wan(head_dim):
    import torch
    from diffusers.models.transformers.transformer_wan import WanRotaryPosEmbed

    module = WanRotaryPosEmbed(attention_head_dim=head_dim, patch_size=(1, 2, 2), max_seq_len=64)
    cos, sin = (r[0, :, 0] for r in module(torch.zeros(1, 4, 3, 8, 12)))
    spatial = 2 * (head_dim // 6)
    found_as(cos, sin, f"per-axis, axes_dim={(head_dim - 2 * spatial, spatial, spatial)}, base=10000",
             thw_ids(3, 4, 6).T)


@needs_sources
def test_cogvideox():
    from diffusers.models.embeddings import get_3d_rotary_pos_embed

    cos, sin = get_3d_rotary_pos_embed(64, None, (4, 6), 3, grid_type="slice", max_size=(8, 8))
    found_as(cos, sin, "per-axis, axes_dim=(16, 24, 24), base=10000", thw_ids(3, 4, 6).T)


def qwen_mrope(section, interleaved, ids, head_dim):
    import torch
    from transformers import Qwen2VLTextConfig, Qwen3VLTextConfig
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextRotaryEmbedding

    config, module = (Qwen3VLTextConfig, Qwen3VLTextRotaryEmbedding) if interleaved else (Qwen2VLTextConfig,
                                                                                          Qwen2VLRotaryEmbedding)
    parameters = {"rope_type": "default", "rope_theta": 1e6, "mrope_section": list(section)}
    rotary = module(config(rope_parameters=parameters, hidden_size=2 * head_dim, num_attention_heads=2, head_dim=head_dim))
    return rotary(torch.zeros(1), torch.from_numpy(ids[:, None]))


SEGMENTS = [[3, (1, 4, 6), 2, (3, 2, 4), 2], [5, (1, 6, 4), 4]]


@needs_sources
@pytest.mark.parametrize("segments", SEGMENTS)
@pytest.mark.parametrize("section", [(4, 6, 6), (16, 24, 24), (8, 12, 12)])
def test_qwen2_vl_mrope(segments, section):
    ids = rg.mrope_position_ids(segments)
    cos, sin = qwen_mrope(section, False, ids, 2 * sum(section))
    # from cos alone the width's slowest angles stay below what float32 cos resolves (1 - 6e-8): not read
    found = found_as(cos, sin, f"mrope, mrope_section={section}, base=1e+06, layout='half'", ids, only=("both", "sin"))
    assert "Qwen2VLRotaryEmbedding" in found.sources[0]


@needs_sources
@pytest.mark.parametrize("segments", SEGMENTS)
@pytest.mark.parametrize("section", [(6, 5, 5), (24, 20, 20), (10, 7, 7)])
def test_qwen3_vl_interleaved_mrope(segments, section):
    ids = rg.mrope_position_ids(segments)
    cos, sin = qwen_mrope(section, True, ids, 2 * sum(section))
    found = found_as(cos, sin, f"mrope interleaved, mrope_section={section}, base=1e+06, layout='half'", ids,
                     only=("both", "sin"))
    assert "Qwen3VLTextRotaryEmbedding" in found.sources[0]
    assert "mrope interleaved" in posenc.identify_rope(cos.numpy()).matches[0]  # from cos: the same rule


@needs_sources
@pytest.mark.parametrize(("height", "width"), [(3, 5), (5, 3), (4, 4)])
def test_pixtral(height, width):
    import torch
    from transformers import PixtralVisionConfig
    from transformers.models.pixtral.modeling_pixtral import PixtralVisionRotaryEmbedding

    rotary = PixtralVisionRotaryEmbedding(PixtralVisionConfig(hidden_size=128, num_attention_heads=2, head_dim=64))
    ids = rg.grid_position_ids(height, width)
    cos, sin = rotary(torch.zeros(1), torch.from_numpy(ids).T)
    found = found_as(cos, sin, "pixtral, head_dim=64, base=10000, layout='half'", ids)
    # Qwen2-VL's rule reproduces it too, at the width's positions times 10000 ** (-1 / 32): not integers
    assert found.matches == ("pixtral, head_dim=64, base=10000, layout='half'",)


@needs_sources
@pytest.mark.parametrize("grid", [(1, 4, 6), (2, 6, 4)])
def test_qwen2_vl_vision_rotary(grid):
    import torch
    from transformers import Qwen2VLVisionConfig
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLVisionRotaryEmbedding

    config = Qwen2VLVisionConfig(depth=1, embed_dim=64, num_heads=2, hidden_size=64)
    ids = rg.grid_position_ids(*grid[1:], spatial_merge_size=config.spatial_merge_size, frames=grid[0])
    cos, sin = Qwen2VLVisionRotaryEmbedding(config)(torch.zeros(1), torch.from_numpy(ids).T)
    found = found_as(cos, sin, "qwen2_vl, head_dim=32, base=10000, layout='half'", ids)
    # the same numbers as per-axis RoPE with two equal halves
    assert found.matches == ("per-axis, axes_dim=(16, 16), base=10000, layout='half'",
                             "qwen2_vl, head_dim=32, base=10000, layout='half'")


# --- posenc's own tables ----------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize(("shape", "head_dim"), [((3, 5), 32), ((7, 2), 64), ((6, 9), 48), ((2, 4), 16)])
@pytest.mark.parametrize("convention", ["pixtral", "qwen2_vl"])
def test_axial(layout, shape, head_dim, convention):
    ids = rg.grid_position_ids(*shape)
    cos, sin = rg.axial_cos_sin(ids, head_dim, convention=convention, layout=layout)
    found_as(cos, sin, f"{convention}, head_dim={head_dim}, base=10000, layout={layout!r}", ids)


def test_pixtral_on_one_row_reads_a_height_of_zero():
    # one row of patches: the height pairs stay at angle 0 (an axis at zero), the width's carry the rule
    ids = rg.grid_position_ids(1, 6)
    cos, sin = rg.axial_cos_sin(ids, 32, convention="pixtral")
    found = found_as(cos, sin, "pixtral, head_dim=32, base=10000, layout='half'", ids, only=("both", "sin"))
    assert found.matches == ("pixtral, head_dim=32, base=10000, layout='half'",)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize(("section", "interleaved", "head_dim"), [
    ((4, 6, 6), False, 32), ((2, 3, 3), False, 16), ((6, 5, 5), True, 32), ((8, 12, 12), True, 72)])
def test_mrope(layout, section, interleaved, head_dim):
    ids = rg.mrope_position_ids([4, (1, 6, 4), 3, (2, 4, 2), 1])
    cos, sin = rg.mrope_cos_sin(ids, head_dim, mrope_section=section, interleaved=interleaved, base=1e6, layout=layout)
    name = "mrope interleaved" if interleaved else "mrope"
    # interleaved: read as (pairs - s1 - s2, s1, s2), GenLIP's (8, 12, 12) at head 72 giving time the other 4 pairs
    read = (head_dim // 2 - sum(section[1:]), *section[1:]) if interleaved else section
    found_as(cos, sin, f"{name}, mrope_section={read}, base=1e+06, layout={layout!r}", ids, only=("both",))


def test_interleaved_sections_past_the_last_pair_are_cut():
    # (8, 12, 12) at head 64: the height holds pairs 1, 4, ..., 31 (11 of them), the width 2, 5, ..., 29 (10)
    ids = rg.mrope_position_ids([4, (1, 6, 4), 3])
    cos, sin = rg.mrope_cos_sin(ids, 64, mrope_section=(8, 12, 12), interleaved=True, base=1e6)
    found = posenc.identify_rope(cos, sin)
    assert found.matches == ("mrope interleaved, mrope_section=(11, 11, 10), base=1e+06, layout='half'",)
    again = rg.mrope_cos_sin(ids, 64, mrope_section=(11, 11, 10), interleaved=True, base=1e6)
    np.testing.assert_array_equal(again[0], cos)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize(("axes_dim", "shape", "base"), [((16, 56, 56), (2, 5, 7), 10000.0), ((8, 12, 20), (3, 4, 4), 256.0),
                                                        ((32, 32, 32, 32), (2, 3, 2, 5), 2000.0), ((20, 12), (9, 4), 100.0),
                                                        ((12, 12, 8), (2, 3, 4), 500.0), ((16, 16), (3, 5), 100.0)])
def test_per_axis(layout, axes_dim, shape, base):
    grids = np.meshgrid(*(np.arange(n) for n in shape), indexing="ij")
    ids = np.stack([g.reshape(-1) for g in grids], -1)
    cos, sin = rg.per_axis_cos_sin(ids, axes_dim, base=base, layout=layout)
    found = found_as(cos, sin, f"per-axis, axes_dim={axes_dim}, base={base:g}, layout={layout!r}", ids.T)
    # Qwen2-VL's 2-D rope is the per-axis one with two equal halves, and only then.
    qwen = f"qwen2_vl, head_dim={sum(axes_dim)}, base={base:g}, layout={layout!r}"
    assert found.matches[1:] == ((qwen,) if axes_dim == (16, 16) else ())


@pytest.mark.parametrize("axes_dim", [(6, 12, 12), (10, 12, 12), (14, 16, 16)])
def test_an_axis_at_zero_with_an_odd_number_of_pairs(axes_dim):
    # Flux's image ids keep the time at 0: its pairs (3, 5, 7 here) are one block at zero, walked to its end
    ids = rg.flux_position_ids(0, 3, 5)
    cos, sin = rg.per_axis_cos_sin(ids, axes_dim)
    found_as(cos, sin, f"per-axis, axes_dim={axes_dim}, base=10000, layout='interleaved'", ids.T)


def test_leading_axes_and_fractional_positions():
    # (batch, seq, head_dim) tables, as transformers returns them, and positions at the patches' centres
    ids = np.stack([rg.mrope_position_ids([3, (1, 4, 6), 2])] * 2, axis=1)
    cos, sin = rg.mrope_cos_sin(ids, 32, mrope_section=(4, 6, 6), base=1e6)
    assert posenc.identify_rope(cos, sin).matches == ("mrope, mrope_section=(4, 6, 6), base=1e+06, layout='half'",)
    centres = posenc.sinusoidal.patch_positions((5, 7), grid_offset=0.5)
    found = posenc.identify_rope(*rg.axial_cos_sin(centres, 32))
    np.testing.assert_allclose(found.positions, centres, atol=1e-6)
    assert "qwen2_vl, head_dim=32, base=10000, layout='half'" in found.matches


# --- pixel frequencies ---------------------------------------------------------------------------


def pixel_found(cos, sin, label, shape):
    """identify_rope of a pixel table (cos and sin): its one match is ``label``, read at the grid's
    coordinates, and its call rebuilds the table."""
    found = posenc.identify_rope(np.float32(cos), np.float32(sin))
    assert found.matches == (label,), found
    # from cos or sin alone the coordinates' signs are lost: answered, not raised (and no rule named wrongly)
    for alone in (posenc.identify_rope(np.float32(cos)), posenc.identify_rope(sin=np.float32(sin))):
        assert str(alone).startswith("not a RoPE table I can reproduce: "), alone
    assert "timm's RotaryEmbedding" in found.sources[0] and found.max_deviation <= found.tolerance
    np.testing.assert_allclose(found.positions, posenc.sinusoidal.patch_positions(shape, normalize="pixel"), atol=1e-6)
    rebuilt = eval(found.call, {"posenc": posenc, "positions": found.positions})  # noqa: S307 (our own call string)
    np.testing.assert_allclose(rebuilt[0], cos, atol=found.tolerance)
    return found


# grids on which one max_freq reproduces each table (on others several do: (7, 7) takes 76 for 160, below)
PIXEL_SHAPES = [(9, 6), (8, 8), (13, 10), (12, 7)]


@pytest.mark.parametrize("shape", PIXEL_SHAPES)
@pytest.mark.parametrize("dim", [32, 64])
@pytest.mark.parametrize(("linear", "max_res"), [(False, 224), (True, 224), (False, 512), (True, 160)])
def test_timm_pixel_rotary(shape, dim, linear, max_res, torch):
    sin, cos = timm_rotary_reference(shape, dim, max_res, linear_bands=linear)
    spacing = "linear" if linear else "log"
    found = pixel_found(cos, sin, f"pixel, max_freq={float(max_res)!r}, spacing={spacing!r}, layout='interleaved'", shape)
    assert found.call == (f"posenc.rope.pixel_cos_sin(positions, {dim}, max_freq={float(max_res)!r}, spacing={spacing!r}, "
                          "layout='interleaved')")


@pytest.mark.parametrize("shape", PIXEL_SHAPES)
@pytest.mark.parametrize(("dim", "max_freq"), [(16, 10), (32, 256)])
def test_rotary_embedding_torch_pixel(shape, dim, max_freq, torch):
    angles = rotary_embedding_torch_reference(*shape, dim, max_freq).reshape(-1, 2 * dim).numpy()
    pixel_found(np.cos(angles), np.sin(angles), f"pixel, max_freq={float(max_freq)!r}, spacing='linear', "
                "layout='interleaved'", shape)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize(("shape", "head_dim", "max_freq", "spacing"), [
    ((7, 7), 32, 224, "log"), ((11, 6), 48, 96, "linear"), ((5, 9), 64, (224, 100), "linear"), ((8, 8), 24, 10, "linear"),
    ((4, 5, 6), 48, 32, "log")])
def test_pixel_cos_sin(layout, shape, head_dim, max_freq, spacing):
    positions = posenc.sinusoidal.patch_positions(shape, normalize="pixel")
    cos, sin = posenc.rope.pixel_cos_sin(positions, head_dim, max_freq=max_freq, spacing=spacing, layout=layout)
    top = tuple(map(float, max_freq)) if isinstance(max_freq, tuple) else float(max_freq)
    pixel_found(cos, sin, f"pixel, max_freq={top!r}, spacing={spacing!r}, layout={layout!r}", shape)


@pytest.mark.parametrize(("shape", "head_dim", "max_freq", "alias"), [((7, 7), 32, 160, 76), ((11, 6), 32, 160, 20)])
def test_coarse_pixel_grids_alias_max_freq(shape, head_dim, max_freq, alias):
    # on a coarse grid a smaller max_freq turns every pair to the same angles modulo 2 pi: the smallest is named
    positions = posenc.sinusoidal.patch_positions(shape, normalize="pixel")
    cos, sin = posenc.rope.pixel_cos_sin(positions, head_dim, max_freq=max_freq, dtype=np.float64)
    again = posenc.rope.pixel_cos_sin(positions, head_dim, max_freq=alias, dtype=np.float64)
    np.testing.assert_allclose(again, (cos, sin), atol=1e-11)
    found = posenc.identify_rope(cos, sin)
    assert found.matches == (f"pixel, max_freq={float(alias)!r}, spacing='linear', layout='interleaved'",)


def test_values_a_rounding_past_1_are_read_as_1():
    # Up to 1e-5 beyond [-1, 1] is taken as rounding (more is an attention factor): cos alone is read
    # through arccos, which is NaN past 1.
    cos = posenc.rope.per_axis_cos_sin(thw_ids(2, 3, 5), (8, 12, 12))[0]
    nudged = np.where(cos == 1.0, np.float32(1 + 2e-6), cos)
    assert posenc.identify_rope(nudged).matches == ("per-axis, axes_dim=(8, 12, 12), base=10000, layout='interleaved'",)


# --- what it cannot reproduce ---------------------------------------------------------------------


def angles_table(angles):
    both = np.concatenate([angles, angles], axis=1)
    return np.cos(both), np.sin(both)


RNG = np.random.default_rng(0)
NOT_ROPE = {
    "uniform noise": (RNG.uniform(-1, 1, (20, 32)), RNG.uniform(-1, 1, (20, 32))),
    "random angles, half layout": angles_table(RNG.uniform(-10, 10, (30, 8))),
    "random frequencies on three axes": angles_table(np.concatenate(
        [RNG.integers(0, 50, (30, 3))[:, [k % 3]] * RNG.uniform(0, 1) for k in range(8)], axis=1)),
    "1-D RoPE": posenc.rotary_cos_sin(np.arange(40), 32),
    "scaled by an attention factor": (1.2 * np.ones((4, 8)), np.zeros((4, 8))),
    "odd width": (np.ones((4, 7)), np.zeros((4, 7))),
}


@pytest.mark.parametrize("name", NOT_ROPE)
def test_what_no_rule_wrote_is_answered(name):
    cos, sin = NOT_ROPE[name]
    for args in ((cos, sin), (cos, None), (None, sin)):
        found = posenc.identify_rope(*args)
        assert found.matches == () and found.positions is None and found.call is None
        assert str(found).startswith("not a RoPE table I can reproduce: ")


def test_what_no_rule_wrote_says_why():
    cos, sin = NOT_ROPE["1-D RoPE"]
    assert str(posenc.identify_rope(cos, sin)) == ("not a RoPE table I can reproduce: half layout: fewer than two axes read "
                                                   "off its slow pairs (1-D RoPE, a grid whose axes agree everywhere, or no RoPE)")
    assert str(posenc.identify_rope(cos)) == "not a RoPE table I can reproduce: no rule's frequencies and axes fit its pairs"


def test_what_a_rule_wrote_is_answered_in_one_line():
    cos, sin = posenc.rope.per_axis_cos_sin(rg.flux_position_ids(2, 3, 4), (8, 12, 12))
    found = posenc.identify_rope(cos, sin)
    assert str(found) == (
        "per-axis, axes_dim=(8, 12, 12), base=10000, layout='interleaved' (diffusers' get_1d_rotary_pos_embed per axis "
        f"(Flux's FluxPosEmbed, HunyuanVideo, Wan, CogVideoX, Lumina)); max deviation {found.max_deviation:.2g}; rebuilt by "
        "posenc.rope.per_axis_cos_sin(positions.T, (8, 12, 12), base=10000.0, layout='interleaved')")


def test_bad_input_names_the_argument():
    with pytest.raises(TypeError, match="identify_rope needs cos or sin"):
        posenc.identify_rope()
    with pytest.raises(ValueError, match=r"cos and sin must have the same shape, got \(4, 8\) and \(4, 6\)"):
        posenc.identify_rope(np.ones((4, 8)), np.zeros((4, 6)))
    with pytest.raises(ValueError, match="sin must be finite"):
        posenc.identify_rope(np.ones((4, 8)), np.full((4, 8), np.nan))
    with pytest.raises(TypeError, match="cos must be an array of real numbers"):
        posenc.identify_rope("cos")


@pytest.mark.parametrize("make", [
    lambda ids: rg.mrope_cos_sin(ids, 32, mrope_section=(4, 6, 6), base=1e6, dtype=np.float64),
    lambda ids: rg.mrope_cos_sin(ids, 32, mrope_section=(6, 5, 5), interleaved=True, base=1e6, dtype=np.float64),
    lambda ids: rg.axial_cos_sin(ids[1:], 32, dtype=np.float64),
    lambda ids: rg.per_axis_cos_sin(ids.T, (8, 12, 12), dtype=np.float64),
], ids=["mrope", "mrope-interleaved", "2-D", "per-axis"])
def test_a_float64_table_is_rebuilt_in_float64(make):
    # Rebuilt by the formula that wrote it, in the same precision: not a float32 rounding away.
    found = posenc.identify_rope(*make(rg.mrope_position_ids([3, (1, 4, 6), 2])))
    assert found.matches and found.max_deviation == 0.0


def test_a_cos_and_sin_off_the_unit_circle_are_no_rope():
    found = posenc.identify_rope(np.ones((4, 8)), np.ones((4, 8)))
    assert found.matches == () and str(found) == "not a RoPE table I can reproduce: cos**2 + sin**2 is not 1"
