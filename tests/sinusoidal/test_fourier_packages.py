"""Random Fourier features (posenc.sinusoidal.random_fourier_features) against transformers 5.23's
SAM, SAM 2 and EdgeTAM ``PositionalEmbedding`` modules (the ``PositionEmbeddingRandom`` of the
segment-anything repositories) and SAM 2's dense grid, with the modules' own Gaussian matrix.
Every test here compares with transformers, hence the module-level importorskip; the formula
and bad input are in test_fourier.py.

The modules run in float32 (coordinates, product, 2 pi, sin and cos): their features are off by
about ``|angle| * 2**-23``; run in float64 (``.double()``) they are the formula, and posenc's
float64 features are within a few 1e-16 of them.
"""

import types

import numpy as np
import pytest

from posenc.sinusoidal import patch_positions, random_fourier_features

# Every test here compares with transformers, hence one skip for the file.
torch = pytest.importorskip("torch")
pytest.importorskip("transformers", minversion="5.0")
from transformers import EdgeTamPromptEncoderConfig, Sam2PromptEncoderConfig, SamVisionConfig  # noqa: E402
from transformers.models.edgetam.modeling_edgetam import EdgeTamPositionalEmbedding  # noqa: E402
from transformers.models.sam.modeling_sam import SamPositionalEmbedding  # noqa: E402
from transformers.models.sam2.modeling_sam2 import Sam2Model, Sam2PositionalEmbedding  # noqa: E402

SPACING = 2.0**-23
# Each module with the config its model gives it: SAM's vision config (whose scale is hidden_size // 2),
# SAM 2's and EdgeTAM's prompt encoder config (scale given).
MODULES = [
    (SamPositionalEmbedding, lambda scale: SamVisionConfig(hidden_size=2 * scale, num_attention_heads=1, num_pos_feats=16)),
    (Sam2PositionalEmbedding, lambda scale: Sam2PromptEncoderConfig(hidden_size=32, scale=scale)),
    (EdgeTamPositionalEmbedding, lambda scale: EdgeTamPromptEncoderConfig(hidden_size=32, scale=scale)),
]


def module_of(module_class, config, scale=1):
    torch.manual_seed(0)
    module = module_class(config(scale))
    assert module.scale == scale
    return module


def angle_bound(features):
    """float32 features computed by a source: off by a few |angle| * 2**-24; the angle is at most 2 pi sum |G|."""
    return SPACING * (1 + 2 * features)


@pytest.mark.parametrize(("module_class", "config"), MODULES, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("scale", [1, 10])
def test_prompt_points_equal_transformers(module_class, config, scale):
    module = module_of(module_class, config, scale)
    projection = module.positional_embedding.detach().numpy()
    # prompt points in pixels of a 600 x 800 (height x width) image, shifted to their pixel's centre as the prompt encoder does
    points = np.array([[[[10, 20], [799, 0], [400, 599], [0, 0], [123, 457]]]], dtype=np.float64) + 0.5
    ours = random_fourier_features(points, projection, input_shape=(600, 800), dtype=np.float64)
    double = module.double()(torch.from_numpy(points), input_shape=(600, 800)).detach().numpy()
    np.testing.assert_allclose(ours, double, rtol=0, atol=5e-15 * scale)
    single = module.float()(torch.from_numpy(points).float(), input_shape=(600, 800)).detach().numpy()
    largest = 2 * np.pi * np.abs(projection).sum(0).max()
    ours32 = random_fourier_features(points, projection, input_shape=(600, 800))
    assert ours32.dtype == np.float32 and ours32.shape == single.shape == (1, 1, 5, 2 * projection.shape[1])
    np.testing.assert_allclose(ours32, single, rtol=0, atol=angle_bound(largest))


@pytest.mark.parametrize("size", [(5, 7), (7, 5), (4, 4)])
def test_sam2_dense_grid_equals_transformers(size):
    embedding = module_of(*MODULES[1]).double()
    model = types.SimpleNamespace(prompt_encoder=types.SimpleNamespace(image_embedding_size=size), shared_image_embedding=embedding)
    theirs = Sam2Model.get_image_wide_positional_embeddings(model)[0].numpy()  # (channels, height, width)
    # the centres of the patches, (x, y) in [0, 1]: patch_positions gives (row, column), offset by half a patch
    coords = patch_positions(size, grid_offset=0.5)[::-1].T
    ours = random_fourier_features(coords, embedding.positional_embedding.numpy(), input_shape=size, dtype=np.float64)
    np.testing.assert_allclose(ours.T.reshape(-1, *size), theirs, rtol=0, atol=5e-15)
