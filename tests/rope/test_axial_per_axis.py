"""RoPE with a width per axis (posenc.rope.axial.per_axis_*) against the installed diffusers 0.42.1
(every test here compares with it, hence the module-level importorskip; the formulas, accuracy
and bad input are in test_axial.py):
Flux's and Flux 2's ``FluxPosEmbed`` and the pipeline's ids, HunyuanVideo's and Wan's rotary
modules, CogVideoX's ``get_3d_rotary_pos_embed`` and Lumina 2's complex ``freqs_cis``.

Flux, Flux 2, Wan and Lumina build their frequencies and angles in float64 and round cos and sin
once to float32: posenc's float32 values are within one float32 spacing of theirs.
HunyuanVideo and CogVideoX compute in float32 (frequencies, products, cos): theirs are off by
about ``|angle| * 2**-23``, which the bound ``float32_angles`` allows for.
"""

import numpy as np
import pytest

from posenc.rope import axial as rg

# Every test here compares with diffusers, hence one skip for the file.
torch = pytest.importorskip("torch")
embeddings = pytest.importorskip("diffusers.models.embeddings", reason="install the conventions extra")
from diffusers.models.transformers.transformer_flux import FluxPosEmbed  # noqa: E402
from diffusers.models.transformers.transformer_flux2 import Flux2PosEmbed  # noqa: E402
from diffusers.models.transformers.transformer_hunyuan_video import HunyuanVideoRotaryPosEmbed  # noqa: E402
from diffusers.models.transformers.transformer_lumina2 import Lumina2RotaryPosEmbed  # noqa: E402
from diffusers.models.transformers.transformer_wan import WanRotaryPosEmbed  # noqa: E402

SPACING = 2.0**-23  # one float32 spacing of values in [0.5, 1]: two roundings of the same float64 value
GRIDS = [(3, 5), (5, 3), (1, 7), (4, 4)]


def close(theirs, ours, atol=SPACING):
    np.testing.assert_allclose(np.asarray(ours, np.float64), np.asarray(theirs, np.float64), rtol=0, atol=atol)


def float32_angles(largest_angle):
    """The bound for a source computing in float32: its angle is off by a few |angle| * 2**-24."""
    return SPACING * (1 + 2 * largest_angle)


def thw_ids(frames, height, width):
    """(frames * height * width, 3) ids (t, row, column), frame outermost, row by row."""
    return np.stack([g.reshape(-1) for g in np.meshgrid(np.arange(frames), np.arange(height), np.arange(width),
                                                        indexing="ij")], -1)


@pytest.mark.parametrize(("height", "width"), GRIDS)
@pytest.mark.parametrize("text", [0, 6])
@pytest.mark.parametrize("axes_dim", [(16, 56, 56), (8, 12, 12), (4, 30, 2)])
def test_flux_pos_embed(height, width, text, axes_dim):
    from diffusers.pipelines.flux.pipeline_flux import FluxPipeline

    ids = rg.flux_position_ids(text, height, width)
    # the pipeline's text_ids (zeros) and image ids, joined text first as FluxTransformer2DModel does
    theirs_ids = torch.cat([torch.zeros(text, 3), FluxPipeline._prepare_latent_image_ids(1, height, width, "cpu", torch.float32)])
    np.testing.assert_array_equal(ids, theirs_ids.numpy())
    references = FluxPosEmbed(theta=10000, axes_dim=list(axes_dim))(theirs_ids)
    ours = rg.per_axis_cos_sin(ids, axes_dim)
    for mine, reference in zip(ours, references):
        assert mine.dtype == np.float32 and mine.shape == tuple(reference.shape)
        close(reference, mine)
    # the text tokens sit at the origin: no rotation
    assert (ours[0][:text] == 1).all() and (ours[1][:text] == 0).all()


@pytest.mark.parametrize("axes_dim", [(32, 32, 32, 32), (8, 16, 24, 16)])
def test_flux2_four_axes_theta_2000(axes_dim):
    # Flux 2 (axes_dims_rope (32, 32, 32, 32), rope_theta 2000): ids (t, h, w, l); here odd,
    # non-square ranges with a fractional coordinate on the last axis.
    rng = np.random.default_rng(0)
    ids = np.stack([rng.integers(0, 4, 30), rng.integers(0, 9, 30), rng.integers(0, 5, 30), rng.integers(0, 40, 30) / 3], -1)
    references = Flux2PosEmbed(theta=2000, axes_dim=list(axes_dim))(torch.from_numpy(ids).float())
    for mine, reference in zip(rg.per_axis_cos_sin(ids.astype(np.float32), axes_dim, base=2000), references):
        close(reference, mine)


@pytest.mark.parametrize(("frames", "height", "width"), [(3, 4, 6), (2, 5, 3), (1, 3, 3)])
@pytest.mark.parametrize("rope_dim", [(16, 56, 56), (8, 28, 28)])
def test_hunyuan_video(frames, height, width, rope_dim):
    module = HunyuanVideoRotaryPosEmbed(patch_size=2, patch_size_t=1, rope_dim=list(rope_dim), theta=256.0)
    references = module(torch.zeros(1, 4, frames, 2 * height, 2 * width))
    ids = thw_ids(frames, height, width)
    for mine, reference in zip(rg.per_axis_cos_sin(ids, rope_dim, base=256.0), references):
        close(reference, mine, float32_angles(ids.max()))


@pytest.mark.parametrize("head_dim", [128, 96, 64, 40])
@pytest.mark.parametrize(("frames", "height", "width"), [(3, 4, 6), (2, 5, 3)])
def test_wan(head_dim, frames, height, width):
    module = WanRotaryPosEmbed(attention_head_dim=head_dim, patch_size=(1, 2, 2), max_seq_len=64)
    references = [r[0, :, 0] for r in module(torch.zeros(1, 4, frames, 2 * height, 2 * width))]
    # Wan's split of the head: 2 * (head_dim // 6) channels each for height and width, the rest for time
    spatial = 2 * (head_dim // 6)
    axes_dim = (head_dim - 2 * spatial, spatial, spatial)
    for mine, reference in zip(rg.per_axis_cos_sin(thw_ids(frames, height, width), axes_dim), references):
        close(reference, mine)


@pytest.mark.parametrize("embed_dim", [64, 128])
@pytest.mark.parametrize(("frames", "grid"), [(3, (4, 6)), (2, (5, 3))])
def test_cogvideox(embed_dim, frames, grid):
    axes_dim = (embed_dim // 4, embed_dim // 8 * 3, embed_dim // 8 * 3)
    # CogVideoX 1.5: integer positions ("slice"); 1.0: a linspace over a crop region, fractional.
    sliced = embeddings.get_3d_rotary_pos_embed(embed_dim, None, grid, frames, grid_type="slice", max_size=(8, 8))
    ids = thw_ids(frames, *grid)
    for mine, reference in zip(rg.per_axis_cos_sin(ids, axes_dim), sliced):
        close(reference, mine, float32_angles(ids.max()))
    crop = ((1, 0), (1 + grid[0] * 0.75, grid[1]))
    spaced = embeddings.get_3d_rotary_pos_embed(embed_dim, crop, grid, frames, grid_type="linspace")
    axes = [torch.linspace(0, frames - 1, frames)] + [
        torch.linspace(start, stop * (n - 1) / n, n) for start, stop, n in zip(crop[0], crop[1], grid)]
    ids = torch.stack(torch.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3).numpy()
    assert not np.array_equal(ids, np.round(ids))
    for mine, reference in zip(rg.per_axis_cos_sin(ids, axes_dim), spaced):
        close(reference, mine, float32_angles(ids.max()))


@pytest.mark.parametrize(("caption", "height", "width"), [(5, 3, 4), (2, 4, 3)])
def test_lumina2_complex_freqs_cis(caption, height, width):
    module = Lumina2RotaryPosEmbed(theta=10000, axes_dim=[32, 32, 32], axes_lens=[300, 512, 512])
    # Lumina 2's ids: caption token k at (k, 0, 0), image patches at (caption, row, column)
    ids = np.zeros((1, caption + height * width, 3), np.int64)
    ids[0, :caption, 0] = np.arange(caption)
    ids[0, caption:] = np.concatenate([np.full((height * width, 1), caption), thw_ids(1, height, width)[:, 1:]], -1)
    reference = module._get_freqs_cis(torch.from_numpy(ids)).numpy()
    assert reference.dtype == np.complex128
    ours = rg.per_axis_cis(ids, (32, 32, 32), dtype=np.complex128)
    assert ours.dtype == np.complex128 and ours.shape == reference.shape
    np.testing.assert_allclose(ours, reference, rtol=0, atol=1e-15)
    single = rg.per_axis_cis(ids, (32, 32, 32))
    assert single.dtype == np.complex64
    close(reference.real, single.real)
    close(reference.imag, single.imag)
