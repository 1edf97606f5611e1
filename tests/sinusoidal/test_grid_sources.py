"""Grid options under the sources' names, against the installed sources: SD3's crop from a larger
table (diffusers' PatchEmbed, pos_embed_max_size), Deformable DETR's half-patch offset and
Grounding DINO's temperature 20 (transformers), DINOv3's patch centres normalised to [-1, 1] with its
class and register tokens left unrotated (transformers). EVA-02's ref_feat_shape and the Perception
Encoder's grid_offset are in tests/rope/test_pixels.py.
"""

import math

import numpy as np
import pytest

import posenc
from posenc.rope import axial as rg
from posenc.sinusoidal import patch_positions

# Every test here compares with an installed source, hence one skip for the file.
torch = pytest.importorskip("torch")
pytest.importorskip("transformers", minversion="5.0")
SPACING = 2.0**-23


def close(theirs, ours, atol=SPACING):
    np.testing.assert_allclose(np.asarray(ours, np.float64), np.asarray(theirs, np.float64), rtol=0, atol=atol)


@pytest.mark.parametrize(("height", "width"), [(5, 7), (8, 3), (12, 12), (1, 9)])
@pytest.mark.parametrize(("largest", "base", "scale"), [(12, 4, 1.0), (15, 6, 1.0), (12, 8, 2.0)])
def test_sd3_patch_embed_crop(height, width, largest, base, scale):
    PatchEmbed = pytest.importorskip("diffusers.models.embeddings", reason="install the conventions extra").PatchEmbed

    # SD3: PatchEmbed(height=sample_size, patch_size, pos_embed_max_size): base_size = sample_size // patch_size
    embed = PatchEmbed(height=2 * base, width=2 * base, patch_size=2, in_channels=4, embed_dim=32,
                       interpolation_scale=scale, pos_embed_max_size=largest)
    theirs = embed.cropped_pos_embed(2 * height, 2 * width)[0].numpy()
    ours = posenc.grid_encoding((height, width), 32, convention="diffusers", pos_embed_max_size=largest, base_size=base,
                                interpolation_scale=scale)
    close(theirs, ours, 1e-6)  # positions rounded to float32 there, angles below 12
    # the crop is the centre of the largest table
    top, left = (largest - height) // 2, (largest - width) // 2
    whole = posenc.grid_encoding((largest, largest), 32, convention="diffusers", base_size=base, interpolation_scale=scale)
    centre = whole.reshape(largest, largest, 32)[top : top + height, left : left + width].reshape(-1, 32)
    np.testing.assert_array_equal(ours, centre)


@pytest.mark.parametrize(("height", "width"), [(3, 5), (5, 3), (6, 8), (1, 4)])
def test_deformable_detr_offset(height, width):
    from transformers.models.deformable_detr.modeling_deformable_detr import DeformableDetrSinePositionEmbedding

    build = DeformableDetrSinePositionEmbedding.build_sine_position_embedding
    theirs = build(torch.Size((1, 3, height, width)), torch.device("cpu"), torch.float64, 16, normalize=True,
                   scale=2 * math.pi, temperature=10000, mask=None)[0].reshape(32, -1).T.numpy()
    ours = posenc.grid_encoding((height, width), 32, convention="detr", normalize=True, offset=-0.5, dtype=np.float64)
    close(theirs, ours, 1e-15)
    # offset -0.5 on DETR's 1..n puts each patch at its centre, (k + 0.5) / n of the scale
    assert not np.allclose(ours, posenc.grid_encoding((height, width), 32, convention="detr", normalize=True, dtype=np.float64))


@pytest.mark.parametrize(("height", "width"), [(3, 5), (7, 4)])
def test_grounding_dino_temperature_20(height, width):
    from transformers import GroundingDinoConfig
    from transformers.models.grounding_dino.modeling_grounding_dino import GroundingDinoSinePositionEmbedding

    config = GroundingDinoConfig(d_model=32)
    assert config.positional_embedding_temperature == 20
    module = GroundingDinoSinePositionEmbedding(config)
    theirs = module(torch.zeros(1, 3, height, width), torch.ones(1, height, width, dtype=torch.int64))
    ours = posenc.grid_encoding((height, width), 32, convention="detr", normalize=True, temperature=20)
    close(theirs[0].reshape(32, -1).T, ours, SPACING * (1 + 4 * 2 * math.pi))  # float32 angles up to 2 pi


@pytest.mark.parametrize(("height", "width"), [(3, 5), (5, 3), (4, 4)])
@pytest.mark.parametrize("registers", [0, 4])
def test_dinov3_rope_patch_centres_and_prefix_tokens(height, width, registers):
    from transformers import DINOv3ViTConfig
    from transformers.models.dinov3_vit import modeling_dinov3_vit as dinov3

    config = DINOv3ViTConfig(hidden_size=64, num_attention_heads=2, patch_size=4, image_size=16, rope_theta=100.0,
                             num_register_tokens=registers)
    module = dinov3.DINOv3ViTRopePositionEmbedding(config).eval()
    cos, sin = module(torch.zeros(1, 3, 4 * height, 4 * width))
    # the centres of the patches in [-1, 1]; DINOv3's angles are 2 pi times position times base ** (-4i / head_dim)
    positions = patch_positions((height, width), normalize="center")
    np.testing.assert_allclose(dinov3.get_patches_center_coordinates(height, width, torch.float64, "cpu").T.numpy(),
                               positions, rtol=0, atol=1e-16)
    ours = rg.axial_cos_sin(2 * math.pi * positions, 32, base=100.0)
    close(cos, ours[0], SPACING * (1 + 4 * 2 * math.pi))  # float32 angles up to 2 pi
    close(sin, ours[1], SPACING * (1 + 4 * 2 * math.pi))
    # the class and register tokens come first and are not rotated
    prefix = 1 + registers
    with_prefix = rg.axial_cos_sin(2 * math.pi * patch_positions((height, width), normalize="center",
                                                                 num_prefix_tokens=prefix), 32, base=100.0)
    q, k = torch.randn(2, 1, 2, prefix + height * width, 32, generator=torch.Generator().manual_seed(0))
    theirs_q, _ = dinov3.apply_rotary_pos_emb(q, k, torch.from_numpy(ours[0]), torch.from_numpy(ours[1]))
    ours_q = posenc.apply_rotary(q.numpy(), *with_prefix)
    np.testing.assert_array_equal(ours_q[..., :prefix, :], q[..., :prefix, :].numpy())
    close(theirs_q, ours_q, 1e-6)
