"""RoPE of vision models whose code is not installed here, re-expressed from their source (repository,
path, commit cited; timm needs a torchvision that does not install beside this torch), and against
transformers 5.23 where it has the same rule: timm's GenLIP M-RoPE (interleaved sections that do not
add up to half the head); pixel frequencies (timm's pixel RoPE, rotary-embedding-torch's
freqs_for="pixel", transformers' Perceiver Fourier features, installed).

The re-expressions run in float64, the formula exactly; the sources' float32 arithmetic is off
from it by about ``|angle| * 2**-23``.
"""

import mpmath
import numpy as np
import pytest

import posenc.sinusoidal
from posenc.rope import axial as rg
from posenc.rope import pixels
from pixel_references import rotary_embedding_torch_reference, timm_rotary_reference  # noqa: E402

try:
    import torch
except ImportError:  # the tests that run torch code take the torch fixture (conftest.py): each skips on its own
    torch = None

SPACING = 2.0**-23  # one float32 spacing of values in [0.5, 1]


def close(theirs, ours, atol=SPACING):
    np.testing.assert_allclose(np.asarray(ours, np.float64), np.asarray(theirs, np.float64), rtol=0, atol=atol)


# --- timm's GenLIP M-RoPE ------------------------------------------------------------------


def genlip_reference(h, w, dim, mrope_section=(8, 12, 12), temperature=10000.0):
    """huggingface/pytorch-image-models, timm/layers/pos_embed_sincos.py @ aa4b5850c1543fa488abf260f18390eda46cf85d
    (RotaryEmbeddingMRope.__init__ and get_embed; GenLIP's naflexvit rope_type='mrope'):
    inv_freq = 1/T**(arange(0, dim, 2)/dim); axis per channel of dim // 2: zeros (time), then
    axis[1:3*sec_h:3] = 1, axis[2:3*sec_w:3] = 2 (the slices clamp at dim // 2; sec_t is unused);
    ys, xs of meshgrid(arange(h), arange(w), 'ij') flattened; the time channels stay at position 0;
    angles = pos * inv_freq, emb = cat(angles, angles); returns cat(sin(emb), cos(emb)), [h*w, 2*dim]."""
    inv_freq = 1.0 / temperature ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    axis = torch.zeros(dim // 2, dtype=torch.long)
    axis[1 : mrope_section[1] * 3 : 3] = 1
    axis[2 : mrope_section[2] * 3 : 3] = 2
    ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    ys, xs = ys.reshape(-1).double(), xs.reshape(-1).double()
    pos = torch.zeros(ys.shape[0], dim // 2, dtype=torch.float64)
    pos[:, axis == 1] = ys[:, None]
    pos[:, axis == 2] = xs[:, None]
    emb = torch.cat([pos * inv_freq] * 2, dim=-1)
    return torch.cat([emb.sin(), emb.cos()], dim=-1)


def image_rows(h, w):
    """M-RoPE's (time, height, width) rows of an h x w image: time 0, row, column."""
    return np.concatenate([np.zeros((1, h * w), np.int64), rg.grid_position_ids(h, w)])


@pytest.mark.parametrize(("h", "w"), [(3, 5), (5, 3), (4, 4), (1, 7)])
@pytest.mark.parametrize(("dim", "section"), [(72, (8, 12, 12)), (64, (8, 12, 12)), (64, (16, 8, 8)), (40, (2, 3, 5))])
def test_genlip_mrope_gives_the_remainder_to_time(h, w, dim, section, torch):
    reference = genlip_reference(h, w, dim, section).numpy()
    cos, sin = rg.mrope_cos_sin(image_rows(h, w), dim, mrope_section=section, interleaved=True)
    close(reference[:, :dim], sin)
    close(reference[:, dim:], cos)


def test_genlip_channel_counts():
    # head 72, (8, 12, 12): 36 pairs, 12 each (the time axis gets the 36 - 24 left, not 8);
    # head 64: the width's extent 36 is cut at 32 pairs: 11 / 11 / 10, as timm's docstring says.
    assert np.bincount(rg.mrope_axes((8, 12, 12), interleaved=True, pairs=36)).tolist() == [12, 12, 12]
    assert np.bincount(rg.mrope_axes((8, 12, 12), interleaved=True, pairs=32)).tolist() == [11, 11, 10]
    assert np.bincount(rg.mrope_axes((2, 3, 5), interleaved=True, pairs=20)).tolist() == [12, 3, 5]


def test_qwen3_vl_text_rope_takes_the_same_sections(torch):
    # transformers' Qwen3VLTextRotaryEmbedding has the same rule (recomposition_frequencies): head 72, (8, 12, 12).
    pytest.importorskip("transformers", minversion="5.0")
    from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLTextConfig
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextRotaryEmbedding

    parameters = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [8, 12, 12]}
    module = Qwen3VLTextRotaryEmbedding(Qwen3VLTextConfig(hidden_size=144, num_attention_heads=2, head_dim=72,
                                                          rope_parameters=parameters))
    ids = rg.mrope_position_ids([3, (1, 4, 6), 2])[:, None]
    for theirs, ours in zip(module(torch.zeros(1), torch.from_numpy(ids)),
                            rg.mrope_cos_sin(ids, 72, mrope_section=(8, 12, 12), interleaved=True)):
        close(theirs, ours, SPACING * (1 + 2 * ids.max()))  # float32 angles: off by a few |angle| * 2**-24


def test_sections_in_blocks_must_still_add_up():
    with pytest.raises(ValueError, match=r"mrope_section must add up to the 36 rotary pairs.*\(8, 12, 12\) \(sum 32\); interleaved"):
        rg.mrope_cos_sin(image_rows(2, 2), 72, mrope_section=(8, 12, 12))
    with pytest.raises(ValueError, match="pairs must be a non-negative int, got -1"):
        rg.mrope_axes((1, 1, 1), interleaved=True, pairs=-1)


# --- pixel frequencies ---------------------------------------------------------------------


SHAPES = [(3, 5), (5, 3), (7, 7), (1, 4)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dim", [32, 40, 64])
@pytest.mark.parametrize(("linear", "max_res"), [(False, 224), (True, 224), (True, 96), (False, 512)])
def test_timm_pixel_rotary(shape, dim, linear, max_res, torch):
    sin, cos = timm_rotary_reference(shape, dim, max_res, linear_bands=linear)
    positions = posenc.sinusoidal.patch_positions(shape, normalize="pixel")
    ours = pixels.pixel_cos_sin(positions, dim, max_freq=max_res, spacing="linear" if linear else "log")
    close(cos, ours[0])
    close(sin, ours[1])


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(("dim", "max_freq"), [(16, 10), (32, 256), (6, 10)])
def test_rotary_embedding_torch_pixel(shape, dim, max_freq, torch):
    angles = rotary_embedding_torch_reference(*shape, dim, max_freq).reshape(-1, 2 * dim)
    positions = posenc.sinusoidal.patch_positions(shape, normalize="pixel")
    cos, sin = pixels.pixel_cos_sin(positions, 2 * dim, max_freq=max_freq)
    close(angles.cos(), cos)
    close(angles.sin(), sin)


@pytest.mark.parametrize(("shape", "bands", "max_resolution"), [((7, 6), 8, (224, 224)), ((5, 9), 4, (224, 100)),
                                                               ((4, 3, 5), 6, (16, 32, 32))])
def test_perceiver_fourier_features(shape, bands, max_resolution, torch):
    pytest.importorskip("transformers", minversion="5.0")
    from transformers.models.perceiver import modeling_perceiver as perceiver

    positions = posenc.sinusoidal.patch_positions(shape, normalize="pixel")
    # Perceiver's positions are torch.linspace(-1, 1) in float32: ours within a float32 rounding or two
    theirs = perceiver.build_linear_positions(shape).reshape(-1, len(shape)).numpy()
    close(theirs, positions.T, 2.0**-24)
    cos, sin = pixels.pixel_cos_sin(positions, 2 * len(shape) * bands, max_freq=max_resolution, dtype=np.float64)
    ours = np.concatenate([positions.T, sin[:, ::2], cos[:, ::2]], -1)
    # generate_fourier_features in float64 (its linspace of bands follows the default dtype): the formula exactly
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        exact = perceiver.generate_fourier_features(torch.from_numpy(positions.T)[None], bands, max_resolution).numpy()[0]
    finally:
        torch.set_default_dtype(default)
    np.testing.assert_allclose(ours, exact, rtol=0, atol=1e-13)
    # the module as a model runs it, in float32: off by float32 angles up to pi * max_resolution / 2
    module = perceiver.PerceiverFourierPositionEncoding(bands, max_resolution)
    single = module(list(shape), 1, torch.device("cpu"), torch.float32).numpy()[0]
    close(single, ours, SPACING * (1 + 2 * np.pi * max(max_resolution) / 2))


def test_pixel_frequencies_are_the_formulas():
    with mpmath.workdps(40):
        linear = pixels.pixel_frequencies(12, 224.0, ndim=2)  # 3 per axis: pi * (1, 56.5, 112)
        log = pixels.pixel_frequencies(8, 224.0, spacing="log", ndim=1)  # 4: pi * 2 ** (j * (log2(224) - 1) / 3)
        expected = [mpmath.pi * v for v in (1, mpmath.mpf("56.5"), 112)] * 2
        expected += [mpmath.pi * mpmath.power(2, j * (mpmath.log(224, 2) - 1) / 3) for j in range(4)]
        found = [mpmath.mpf(float(h)) + mpmath.mpf(float(lo)) for f in (linear, log) for h, lo in zip(f.hi, f.lo)]
        assert max(abs(a - b) / b for a, b in zip(found, expected)) < 1e-30
    np.testing.assert_array_equal(linear.axes, [0, 0, 0, 1, 1, 1])
    # one band per axis: linspace(1, top, 1) is 1
    assert pixels.pixel_frequencies(4, 50.0).hi.tolist() == [np.pi, np.pi]


def test_pixel_angles_stay_put_on_a_resized_image():
    # the corners of the image keep their angles whatever the grid; integer positions do not
    small, large = (posenc.sinusoidal.patch_positions(s, normalize="pixel") for s in ((4, 4), (8, 8)))
    a, b = pixels.pixel_cos_sin(small, 16), pixels.pixel_cos_sin(large, 16)
    np.testing.assert_array_equal(a[0][[0, -1]], b[0][[0, -1]])


def test_pixel_bad_input_names_the_argument():
    positions = posenc.sinusoidal.patch_positions((2, 3), normalize="pixel")
    with pytest.raises(ValueError, match="spacing must be one of 'linear', 'log'; got 'geometric'"):
        pixels.pixel_cos_sin(positions, 16, spacing="geometric")
    with pytest.raises(ValueError, match=r"head_dim must be a multiple of 2 \* ndim = 4.*got 18"):
        pixels.pixel_cos_sin(positions, 18)
    with pytest.raises(ValueError, match=r"max_freq must be a positive number, or 2 of them.*got \(224, 224, 224\)"):
        pixels.pixel_cos_sin(positions, 16, max_freq=(224, 224, 224))
    with pytest.raises(ValueError, match="normalize must be one of 'pixel', 'center'; got 'unit'"):
        posenc.sinusoidal.patch_positions((2, 3), normalize="unit")
    with pytest.raises(ValueError, match="grid_offset applies to integer positions"):
        posenc.sinusoidal.patch_positions((2, 3), normalize="pixel", grid_offset=0.5)
    with pytest.raises(ValueError, match=r"ref_feat_shape must hold 2 positive ints.*got \(16,\)"):
        posenc.sinusoidal.patch_positions((2, 3), ref_feat_shape=(16,))


def test_ref_feat_shape_takes_any_size_from_one():
    # a reference grid of one patch per axis: each axis of n patches spans [0, 1), step 1 / n
    y, x = posenc.sinusoidal.patch_positions((2, 4), ref_feat_shape=(1, 1))
    np.testing.assert_array_equal(y, [0, 0, 0, 0, 0.5, 0.5, 0.5, 0.5])
    np.testing.assert_array_equal(x, [0, 0.25, 0.5, 0.75] * 2)
    for bad in [(0, 4), (2, -1), (2.5, 4), (True, 4)]:
        with pytest.raises(ValueError, match="ref_feat_shape must hold 2 positive ints"):
            posenc.sinusoidal.patch_positions((2, 4), ref_feat_shape=bad)


# --- 2-D RoPE and M-RoPE in the interleaved layout -------------------------------------------


@pytest.mark.parametrize(("shape", "ref"), [((16, 16), (16, 16)), ((24, 20), (16, 16)), ((5, 7), (16, 16)), ((3, 5), None)])
@pytest.mark.parametrize("head_dim", [64, 32])
def test_eva02_rotary_embedding_cat(shape, ref, head_dim, torch):
    # timm's EVA-02 (eva.py @ aa4b5850c1543fa488abf260f18390eda46cf85d: RotaryEmbeddingCat(head_dim, in_pixels=False,
    # ref_feat_shape=(16, 16))): the qwen2_vl frequencies, interleaved, at positions rescaled to the reference grid.
    sin, cos = timm_rotary_reference(shape, head_dim, in_pixels=False, ref_feat_shape=ref)
    positions = posenc.sinusoidal.patch_positions(shape, ref_feat_shape=ref)
    ours = rg.axial_cos_sin(positions, head_dim, layout="interleaved")
    close(cos, ours[0])
    close(sin, ours[1])
    # the half layout holds the same values, the pairs' channels moved
    half = rg.axial_cos_sin(positions, head_dim)
    np.testing.assert_array_equal(half[0][:, : head_dim // 2], ours[0][:, ::2])


@pytest.mark.parametrize("shape", [(24, 24), (4, 6), (6, 4)])
def test_perception_encoder_offset_and_xy(shape, torch):
    # Meta's Perception Encoder in timm (eva.py, vit_pe_core_*: ref_feat_shape=(24, 24), rope_grid_offset=1.,
    # rope_grid_indexing='xy'): one-based positions, the column's block first.
    sin, cos = timm_rotary_reference(shape, 64, in_pixels=False, ref_feat_shape=(24, 24), grid_offset=1.0, grid_indexing="xy")
    positions = posenc.sinusoidal.patch_positions(shape, grid_offset=1.0, ref_feat_shape=(24, 24))[::-1]
    ours = rg.axial_cos_sin(positions, 64, layout="interleaved")
    close(cos, ours[0])
    close(sin, ours[1])


@pytest.mark.parametrize(("section", "factor"), [((2, 3, 3), 0.5), ((8, 4, 4), 1.0)])
def test_glm4v_text_mrope_is_interleaved(section, factor, torch):
    # transformers' Glm4vTextRotaryEmbedding: the sections of M-RoPE, repeat_interleave'd (rotate_half_llm)
    pytest.importorskip("transformers", minversion="5.0")
    from transformers.models.glm4v.configuration_glm4v import Glm4vTextConfig
    from transformers.models.glm4v.modeling_glm4v import Glm4vTextRotaryEmbedding

    parameters = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": list(section),
                  "partial_rotary_factor": factor}
    config = Glm4vTextConfig(hidden_size=64, num_attention_heads=2, rope_parameters=parameters)
    module = Glm4vTextRotaryEmbedding(config)
    ids = rg.mrope_position_ids([3, (1, 4, 6), 2])[:, None]
    theirs = module(torch.zeros(1), torch.from_numpy(ids))
    ours = rg.mrope_cos_sin(ids, 32, mrope_section=section, layout="interleaved", partial_rotary_factor=factor)
    for a, b in zip(theirs, ours):
        assert tuple(a.shape) == b.shape
        close(a, b, SPACING * (1 + 2 * ids.max()))


def test_layout_is_checked():
    with pytest.raises(ValueError, match="layout must be one of 'half', 'interleaved'; got 'sin_cos'"):
        rg.axial_cos_sin(rg.grid_position_ids(2, 2), 16, layout="sin_cos")
    with pytest.raises(ValueError, match="layout must be one of 'half', 'interleaved'; got 'paired'"):
        rg.mrope_cos_sin(image_rows(2, 2), 16, mrope_section=(2, 1, 1), layout="paired")
