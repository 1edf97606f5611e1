"""2-D vision RoPE and M-RoPE (posenc.rotary_grid) against transformers 5.23 itself and invariants.

transformers' modules compute ``position * inv_freq`` and cos/sin in float32; at the small
grid positions used here that is within a few float32 roundings (atol 5e-7) of posenc's.
"""

import math

import mpmath
import numpy as np
import pytest

import posenc
from posenc import rotary_grid as rg

torch = pytest.importorskip("torch", reason="the conventions extra needs torch")
transformers = pytest.importorskip(
    "transformers", minversion="5.0", reason="install the conventions extra: pip install -e '.[conventions]'"
)
from transformers import PixtralVisionConfig, Qwen2VLConfig, Qwen2VLModel  # noqa: E402
from transformers.models.pixtral.modeling_pixtral import PixtralVisionRotaryEmbedding  # noqa: E402
from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLTextConfig, Qwen2VLVisionConfig  # noqa: E402
from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding, Qwen2VLVisionRotaryEmbedding  # noqa: E402
from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLVisionConfig  # noqa: E402
from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLVisionRotaryEmbedding  # noqa: E402
from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLTextConfig, Qwen3VLVisionConfig  # noqa: E402
from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextRotaryEmbedding, Qwen3VLVisionRotaryEmbedding  # noqa: E402
from transformers.vision_utils import get_vision_position_ids  # noqa: E402

import posenc.torch as pt  # noqa: E402

FLOAT32 = 5e-7  # a few float32 roundings of values <= 1


def close(theirs, ours, atol=FLOAT32):
    np.testing.assert_allclose(np.asarray(ours, np.float64), theirs.double().numpy(), rtol=0, atol=atol)


@pytest.mark.parametrize(("height", "width"), [(3, 5), (5, 3), (4, 4)])
def test_pixtral_rotary_equals_transformers(height, width):
    config = PixtralVisionConfig(hidden_size=128, num_attention_heads=2, head_dim=64)
    theirs = PixtralVisionRotaryEmbedding(config)
    base = config.rope_parameters["rope_theta"]
    ids = rg.grid_position_ids(height, width)
    # Pixtral's forward builds (row, column) by meshgrid "ij", flattened row by row.
    rows, columns = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    np.testing.assert_array_equal(ids, np.stack([rows.flatten(), columns.flatten()]))
    for ours, reference in zip(rg.axial_cos_sin(ids, 64, base=base, convention="pixtral"), theirs(torch.zeros(1), torch.from_numpy(ids).T)):
        close(reference, ours)


# The vision towers of Qwen2-VL, Qwen2.5-VL and Qwen3-VL (the same rotary formulas in three modules).
VISION = [
    (Qwen2VLVisionConfig, Qwen2VLVisionRotaryEmbedding, {"embed_dim": 64, "num_heads": 2, "hidden_size": 64}),
    (Qwen2_5_VLVisionConfig, Qwen2_5_VLVisionRotaryEmbedding, {"hidden_size": 64, "num_heads": 2, "out_hidden_size": 64}),
    (Qwen3VLVisionConfig, Qwen3VLVisionRotaryEmbedding, {"hidden_size": 64, "num_heads": 2, "out_hidden_size": 64}),
]


@pytest.mark.parametrize(("config_class", "module_class", "sizes"), VISION, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("grids", [[(1, 4, 6)], [(1, 6, 4), (2, 2, 4)]])
def test_qwen_vl_vision_rotary_and_positions_equal_transformers(grids, config_class, module_class, sizes):
    config = config_class(depth=1, **sizes)
    merge = config.spatial_merge_size
    theirs_ids = get_vision_position_ids(torch.tensor(grids), merge)
    ours_ids = np.concatenate([rg.grid_position_ids(h, w, spatial_merge_size=merge, frames=t) for t, h, w in grids], 1)
    np.testing.assert_array_equal(ours_ids, theirs_ids.T.numpy())
    module = module_class(config)
    head_dim = 4 * len(module.inv_freq)  # a quarter of the head per axis, then cos/sin doubled
    base = config.rope_parameters["rope_theta"]
    for ours, reference in zip(pt.axial_cos_sin(torch.from_numpy(ours_ids), head_dim, base=base), module(torch.zeros(1), theirs_ids)):
        assert ours.dtype == torch.float32 and ours.shape == reference.shape
        close(reference, ours)


def test_axial_frequencies_are_the_formulas():
    # Pixtral: w_j = 10000^(-2j/16), even j for rows, odd j for columns; Qwen2-VL: 10000^(-4i/16) twice.
    hi, lo, axes = rg.axial_parts(16, convention="pixtral")
    exact = [mpmath.mpf(10000) ** (-mpmath.mpf(2 * j) / 16) for j in (0, 2, 4, 6, 1, 3, 5, 7)]
    assert all(abs(mpmath.mpf(h) + mpmath.mpf(low) - e) < 1e-28 for h, low, e in zip(hi, lo, exact))
    np.testing.assert_array_equal(axes, [0, 0, 0, 0, 1, 1, 1, 1])
    hi, _, axes = rg.axial_parts(16, convention="qwen2_vl")
    np.testing.assert_allclose(hi, [10000.0 ** (-4 * i / 16) for i in (0, 1, 2, 3, 0, 1, 2, 3)], rtol=1e-15)


@pytest.mark.parametrize("convention", rg.AXIAL_CONVENTIONS)
def test_2d_score_depends_on_the_2d_offset_only(convention):
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, 32))
    ids = rg.grid_position_ids(6, 7)
    cos, sin = rg.axial_cos_sin(ids, 32, convention=convention, dtype=np.float64)
    qs, ks = posenc.apply_rotary(np.broadcast_to(q, cos.shape), cos, sin), posenc.apply_rotary(np.broadcast_to(k, cos.shape), cos, sin)
    scores = qs @ ks.T
    offsets = ids[:, :, None] - ids[:, None, :]  # (2, n, n)
    # Equal 2-D offset -> equal score; the same 1-D distance along another axis -> different.
    same = (offsets[0] == 1) & (offsets[1] == -2)
    assert same.sum() == 5 * 5 and np.ptp(scores[same]) < 1e-12
    swapped = (offsets[0] == -2) & (offsets[1] == 1)
    assert abs(scores[same][0] - scores[swapped][0]) > 1e-3


def test_mrope_position_ids_equal_get_rope_index():
    config = Qwen2VLConfig(
        text_config={"hidden_size": 32, "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 1,
                     "intermediate_size": 32, "vocab_size": 16},
        vision_config={"embed_dim": 16, "num_heads": 2, "depth": 1, "hidden_size": 32},
    )
    model = Qwen2VLModel(config)
    # text, an image of 4 x 6 patches, text, a video of 3 frames of 2 x 4 patches, text.
    segments = [3, (1, 4, 6), 2, (3, 2, 4), 2]
    merge = config.vision_config.spatial_merge_size
    kinds = []
    for s in segments:
        kinds += [0] * s if isinstance(s, int) else [1 if s[0] == 1 else 2] * (s[0] * s[1] * s[2] // merge**2)
    kinds = torch.tensor([kinds])
    theirs, _ = model.get_rope_index(
        torch.zeros_like(kinds), kinds, image_grid_thw=torch.tensor([segments[1]]), video_grid_thw=torch.tensor([segments[3]]),
    )
    ours = rg.mrope_position_ids(segments, spatial_merge_size=merge)
    np.testing.assert_array_equal(ours, theirs[:, 0].numpy())
    # The printed facts: the image's 2 x 3 merged tokens share time 3; text resumes at 3 + max(2, 3) = 6;
    # the video's third frame (time 8 + 2 = 10) shares its time with the text after it.
    np.testing.assert_array_equal(ours[:, 3:9], [[3] * 6, [3, 3, 3, 4, 4, 4], [3, 4, 5, 3, 4, 5]])
    assert ours[0, 9] == 6 and ours[0, -3] == 10 and ours[0, -2] == 10


@pytest.mark.parametrize(("section", "interleaved"), [((4, 6, 6), False), ((6, 5, 5), True)])
def test_mrope_equals_transformers(section, interleaved):
    shape = {"hidden_size": 64, "num_attention_heads": 2, "head_dim": 32}
    parameters = {"rope_type": "default", "rope_theta": 1e6, "mrope_section": list(section)}
    config_class, module_class = (Qwen3VLTextConfig, Qwen3VLTextRotaryEmbedding) if interleaved else (Qwen2VLTextConfig,
                                                                                                      Qwen2VLRotaryEmbedding)
    module = module_class(config_class(rope_parameters=parameters, **shape))
    ids = torch.from_numpy(np.stack([rg.mrope_position_ids([3, (1, 4, 6), 2, (3, 2, 4), 2])] * 2, axis=1))
    theirs = module(torch.zeros(1), ids)
    for ours in (rg.mrope_cos_sin(ids.numpy(), 32, mrope_section=section, interleaved=interleaved, base=1e6),
                 pt.mrope_cos_sin(ids, 32, mrope_section=section, interleaved=interleaved, base=1e6)):
        for a, b in zip(theirs, ours):
            assert tuple(a.shape) == tuple(b.shape) == (2, ids.shape[-1], 32)
            close(a, b)


def test_mrope_axes():
    np.testing.assert_array_equal(rg.mrope_axes([2, 1, 3]), [0, 0, 1, 2, 2, 2])
    # Qwen3-VL: T H W T H W ... for 3 * 2 pairs, then the rest time.
    np.testing.assert_array_equal(rg.mrope_axes([4, 2, 2], interleaved=True), [0, 1, 2, 0, 1, 2, 0, 0])


def test_mrope_on_text_is_1d_rope():
    positions = np.arange(40)
    one_d = posenc.rotary_cos_sin(positions, 32, base=1e6)
    for interleaved, section in ((False, [4, 6, 6]), (True, [6, 5, 5])):
        three = rg.mrope_cos_sin(np.stack([positions] * 3), 32, mrope_section=section, interleaved=interleaved, base=1e6)
        for a, b in zip(one_d, three):
            np.testing.assert_array_equal(a, b)


def test_mrope_accurate_at_long_positions():
    position = 10**6 + 7
    ids = np.array([[position], [3], [5]])
    cos, sin = rg.mrope_cos_sin(ids, 32, mrope_section=[4, 6, 6])
    w = mpmath.mpf(10000) ** (-mpmath.mpf(2 * 3) / 32)  # pair 3 is in the time section
    assert abs(float(mpmath.cos(position * w)) - cos[0, 3]) < 2e-7
    assert abs(float(mpmath.sin(5 * mpmath.mpf(10000) ** (-mpmath.mpf(2 * 12) / 32))) - sin[0, 12]) < 2e-7


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="convention must be one of 'pixtral', 'qwen2_vl'; got 'vit'"):
        rg.axial_parts(32, convention="vit")
    with pytest.raises(ValueError, match="head_dim must be a multiple of 4.*got 30"):
        rg.axial_parts(30)
    with pytest.raises(ValueError, match=r"mrope_section must add up to the 16 rotary pairs.*\(4, 6, 4\) \(sum 14\)"):
        rg.mrope_cos_sin(np.zeros((3, 2)), 32, mrope_section=(4, 6, 4))
    with pytest.raises(ValueError, match=r"positions must have their 3 coordinates first.*got shape \(2, 5\)"):
        rg.mrope_cos_sin(np.zeros((2, 5)), 32, mrope_section=(4, 6, 6))
    with pytest.raises(ValueError, match="w must be a positive int divisible by spatial_merge_size=2, got 5"):
        rg.mrope_position_ids([2, (1, 4, 5)])
    with pytest.raises(ValueError, match=r"segments must hold ints.*got \(1, 4\)"):
        rg.mrope_position_ids([(1, 4)])
    with pytest.raises(ValueError, match="mrope_section must be a list of non-negative ints"):
        rg.mrope_axes("16,24,24")
    assert math.isfinite(rg.mrope_position_ids([]).sum())
