"""2-D vision RoPE and M-RoPE (posenc.rope.axial) against transformers 5.23 itself: every test
here compares with it, hence the one module-level importorskip.

transformers' modules compute ``position * inv_freq`` and cos/sin in float32; at the small
grid positions used here that is within a few float32 roundings (atol 5e-7) of posenc's.
"""

import numpy as np
import pytest

from frameworks import adapter
from posenc.rope import axial as rg

# Every test here compares with transformers, hence one skip for the file.
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
BOUND = 2e-7  # posenc's float32 cos/sin against the exact values, every front and route


def close(theirs, ours, atol=FLOAT32):
    np.testing.assert_allclose(np.asarray(ours, np.float64), np.asarray(theirs.double()), rtol=0, atol=atol)


@pytest.fixture(scope="module")
def pj():
    return adapter("jax").api


@pytest.mark.parametrize(("height", "width"), [(3, 5), (5, 3), (4, 4)])
def test_pixtral_rotary_equals_transformers(height, width, pj):
    config = PixtralVisionConfig(hidden_size=128, num_attention_heads=2, head_dim=64)
    theirs = PixtralVisionRotaryEmbedding(config)
    base = config.rope_parameters["rope_theta"]
    ids = rg.grid_position_ids(height, width)
    # Pixtral's forward builds (row, column) by meshgrid "ij", flattened row by row.
    rows, columns = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    np.testing.assert_array_equal(ids, np.stack([rows.flatten(), columns.flatten()]))
    references = theirs(torch.zeros(1), torch.from_numpy(ids).T)
    for ours, reference in zip(rg.axial_cos_sin(ids, 64, base=base, convention="pixtral"), references):
        close(reference, ours)
    for cos_sin in adapter("jax").eager_and_traced(pj.axial_cos_sin, ids, 64, base=base, convention="pixtral"):
        for ours, reference in zip(cos_sin, references):
            assert ours.dtype == np.float32 and ours.shape == reference.shape
            close(reference, ours)


# The vision towers of Qwen2-VL, Qwen2.5-VL and Qwen3-VL (the same rotary formulas in three modules).
VISION = [
    (Qwen2VLVisionConfig, Qwen2VLVisionRotaryEmbedding, {"embed_dim": 64, "num_heads": 2, "hidden_size": 64}),
    (Qwen2_5_VLVisionConfig, Qwen2_5_VLVisionRotaryEmbedding, {"hidden_size": 64, "num_heads": 2, "out_hidden_size": 64}),
    (Qwen3VLVisionConfig, Qwen3VLVisionRotaryEmbedding, {"hidden_size": 64, "num_heads": 2, "out_hidden_size": 64}),
]


@pytest.mark.parametrize(("config_class", "module_class", "sizes"), VISION, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("grids", [[(1, 4, 6)], [(1, 6, 4), (2, 2, 4)]])
def test_qwen_vl_vision_rotary_and_positions_equal_transformers(grids, config_class, module_class, sizes, pj):
    config = config_class(depth=1, **sizes)
    merge = config.spatial_merge_size
    theirs_ids = get_vision_position_ids(torch.tensor(grids), merge)
    ours_ids = np.concatenate([rg.grid_position_ids(h, w, spatial_merge_size=merge, frames=t) for t, h, w in grids], 1)
    np.testing.assert_array_equal(ours_ids, theirs_ids.T.numpy())
    module = module_class(config)
    head_dim = 4 * len(module.inv_freq)  # a quarter of the head per axis, then cos/sin doubled
    base = config.rope_parameters["rope_theta"]
    references = module(torch.zeros(1), theirs_ids)
    for cos_sin in [pt.axial_cos_sin(torch.from_numpy(ours_ids), head_dim, base=base),
                    *adapter("jax").eager_and_traced(pj.axial_cos_sin, ours_ids, head_dim, base=base)]:
        for ours, reference in zip(cos_sin, references):
            assert str(ours.dtype).endswith("float32") and tuple(ours.shape) == tuple(reference.shape)
            close(reference, ours)


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
def test_mrope_equals_transformers(section, interleaved, pj):
    shape = {"hidden_size": 64, "num_attention_heads": 2, "head_dim": 32}
    parameters = {"rope_type": "default", "rope_theta": 1e6, "mrope_section": list(section)}
    config_class, module_class = (Qwen3VLTextConfig, Qwen3VLTextRotaryEmbedding) if interleaved else (Qwen2VLTextConfig,
                                                                                                      Qwen2VLRotaryEmbedding)
    module = module_class(config_class(rope_parameters=parameters, **shape))
    ids = torch.from_numpy(np.stack([rg.mrope_position_ids([3, (1, 4, 6), 2, (3, 2, 4), 2])] * 2, axis=1))
    theirs = module(torch.zeros(1), ids)
    arguments = {"mrope_section": section, "interleaved": interleaved, "base": 1e6}
    for ours in (rg.mrope_cos_sin(ids.numpy(), 32, **arguments), pt.mrope_cos_sin(ids, 32, **arguments),
                 *adapter("jax").eager_and_traced(pj.mrope_cos_sin, ids.numpy(), 32, **arguments)):
        for a, b in zip(theirs, ours):
            assert tuple(a.shape) == tuple(b.shape) == (2, ids.shape[-1], 32)
            close(a, b)


def tiny_text(config_class, **extra):
    return config_class(hidden_size=64, num_attention_heads=2, num_key_value_heads=1, num_hidden_layers=2,
                        intermediate_size=32, vocab_size=16, **extra)


def from_config_cases():
    vl_text = {"num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 1, "intermediate_size": 32,
               "vocab_size": 16}
    return {
        "llama-yarn": tiny_text(transformers.LlamaConfig, max_position_embeddings=256, rope_parameters={
            "rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0, "original_max_position_embeddings": 64}),
        "qwen2-vl": Qwen2VLConfig(text_config={"hidden_size": 64, "head_dim": 32, "rope_parameters": {
            "rope_type": "default", "rope_theta": 1e6, "mrope_section": [4, 6, 6]}, **vl_text}).text_config,
        # No mrope_section in the config: the family's (16, 24, 24), for heads of 128.
        "qwen2.5-vl": transformers.Qwen2_5_VLConfig(text_config={"hidden_size": 256, **vl_text}).text_config,
        "gemma3": tiny_text(transformers.Gemma3TextConfig, head_dim=32, layer_types=["sliding_attention", "full_attention"],
                            rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
                                             "full_attention": {"rope_type": "linear", "rope_theta": 1e6, "factor": 8.0}}),
        # Its full-attention layers: a head of their own, proportional RoPE on a quarter of its pairs.
        "gemma4": tiny_text(transformers.Gemma4TextConfig, head_dim=16, global_head_dim=64,
                            layer_types=["sliding_attention", "full_attention"]),
    }


@pytest.mark.parametrize("name", ["llama-yarn", "qwen2-vl", "qwen2.5-vl", "gemma3", "gemma4"])
def test_jax_from_config_equals_the_torch_module(name, pj):
    from flax import nnx

    config = from_config_cases()[name]
    ours, theirs = pj.RotaryEmbedding.from_config(config), pt.RotaryEmbedding.from_config(config)
    if name.startswith("gemma"):
        assert isinstance(ours, pj.RotaryEmbeddingPerLayerType) and list(ours) == list(theirs) == ["sliding_attention",
                                                                                                  "full_attention"]
        pairs = [(ours[t], theirs[t], t) for t in theirs]
        full = {"gemma3": (32, {"factor": 8.0}), "gemma4": (64, {"partial_rotary_factor": 0.25})}[name]
        assert (ours["full_attention"].rotary_dim, ours["full_attention"].params, ours["full_attention"].base) == (*full, 1e6)
    else:
        pairs = [(ours, theirs, None)]
    positions = 40_000 + np.arange(2 * 7).reshape(2, 7)
    if name.startswith("qwen"):
        assert ours.mrope_section == tuple(theirs.mrope_section) == ((4, 6, 6) if name == "qwen2-vl" else (16, 24, 24))
        np.testing.assert_array_equal(ours.axes, theirs.axes)
        positions = np.stack([positions, positions // 7, positions % 7])  # (3, batch, seq): three different rows
    for jax_module, torch_module, layer_type in pairs:
        for attribute in ("head_dim", "base", "rope_type", "layout", "form", "rotary_dim", "params", "attention_factor"):
            assert getattr(jax_module, attribute) == getattr(torch_module, attribute), attribute
        want = torch_module(torch.zeros(1), torch.from_numpy(positions))
        x = np.zeros(1, np.float32)
        eager = jax_module(x, positions)
        # Under jit through the module from_config gave (Gemma: the per-layer-type one, given the type).
        jitted = nnx.jit(lambda m, x, p: m(x, p) if layer_type is None else m(x, p, layer_type))(ours, x, positions)
        for got in (eager, jitted):
            for g, w in zip(got, want):
                assert g.dtype == np.float32 and g.shape == tuple(w.shape)
                # Two float32 routes, each within 2e-7 (yarn's attention factor: one rounding more).
                close(w, g, atol=(2 * BOUND + 6e-8) * jax_module.attention_factor)
