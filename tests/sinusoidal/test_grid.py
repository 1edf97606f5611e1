"""posenc.grid: sin-cos tables on grids, against the installed packages and our own re-expressions.

Installed (the `conventions` extra): transformers' 5.x builder (RT-DETR after #41380; ViTMAE
builds with it and swaps the halves), ViTMAE's stored table, RTDetrSinePositionEmbedding,
DetrSinePositionEmbedding, diffusers' get_2d/3d_sincos_pos_embed. Re-expressed below in our
own code, cited (repository, path, commit): MAE, MoCo v3, big_vision, simple ViT, timm's
builder and timm's resample_abs_pos_embed (timm needs torchvision, which does not import
here). The re-expressions run in float64 (the formula exactly); the sources' own float32
arithmetic is off from it by up to about |angle| * 1e-7.
"""

import math

import mpmath
import numpy as np
import pytest

import posenc
from posenc.sinusoidal import grid, patch_positions
from grid_references import (big_vision_reference, detr_reference, mae_reference, moco_reference, simple_vit_reference,
                             timm_reference, timm_resample_reference)

try:
    import torch
except ImportError:  # the NumPy tests run without it; the ones that need torch skip
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="needs torch (the conventions extra)")

NON_SQUARE = [(3, 5), (5, 3), (2, 7), (6, 8), (1, 4)]
DS = [16, 32, 48]


def grid_yx(h, w):
    # Row-major patch coordinates: token k is (k // w, k % w).
    return np.repeat(np.arange(h), w).astype(np.float64), np.tile(np.arange(w), h).astype(np.float64)


# --- against the installed packages ------------------------------------------------------


@pytest.mark.parametrize("shape", NON_SQUARE)
@pytest.mark.parametrize("d", DS)
@needs_torch
def test_rt_detr_is_transformers_builder(shape, d):
    from transformers.models.rt_detr.modeling_rt_detr import RTDetrSinePositionEmbedding, build_2d_sinusoidal_position_embedding

    h, w = shape
    ours = posenc.grid_encoding(shape, d, convention="rt-detr", cls_token=True, temperature=20.0)
    theirs = build_2d_sinusoidal_position_embedding(h, w, d, temperature=20.0, cls_token=True)
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=0, atol=2e-7)  # float64 cast once: one rounding
    module = RTDetrSinePositionEmbedding(d)(w, h, torch.device("cpu"), torch.float32)
    np.testing.assert_allclose(posenc.grid_encoding(shape, d, convention="rt-detr"), module[0].numpy(), rtol=0, atol=2e-7)


@needs_torch
def test_vit_mae_model_stores_mae_table():
    # transformers' ViTMAE builds h first, then swaps the halves: its stored table is MAE's.
    from transformers import ViTMAEConfig
    from transformers.models.vit_mae.modeling_vit_mae import ViTMAEEmbeddings

    config = ViTMAEConfig(hidden_size=32, image_size=40, patch_size=8)
    embeddings = ViTMAEEmbeddings(config)
    embeddings.initialize_weights()  # what loading a model runs (a fresh model skips it here)
    stored = embeddings.position_embeddings[0].detach().numpy()
    np.testing.assert_allclose(posenc.grid_encoding((5, 5), 32, convention="mae", cls_token=True), stored, atol=2e-7)
    # ... which on a square grid is the h-first builder's table with the blocks swapped, not the same table.
    assert np.abs(stored - posenc.grid_encoding((5, 5), 32, convention="rt-detr", cls_token=True)).max() > 0.5


@pytest.mark.parametrize("shape", NON_SQUARE)
@pytest.mark.parametrize("normalize", [False, True])
@needs_torch
def test_detr_is_transformers_detr(shape, normalize):
    from transformers.models.detr.modeling_detr import DetrSinePositionEmbedding

    h, w, d = *shape, 32
    build = DetrSinePositionEmbedding.build_sine_position_embedding
    for mask in (None, torch.ones(1, h, w)):  # positions are the cumulative sum of the mask
        theirs = build(torch.Size((1, 3, h, w)), torch.device("cpu"), torch.float32, d // 2,
                       normalize=normalize, scale=2 * math.pi, temperature=100, mask=mask)
        ours = posenc.grid_encoding(shape, d, convention="detr", normalize=normalize, temperature=100)
        np.testing.assert_allclose(ours, theirs[0].reshape(d, h * w).T.numpy(), rtol=0, atol=2e-6)  # float32 source
        np.testing.assert_allclose(ours.T.reshape(d, h, w), theirs[0].numpy(), rtol=0, atol=2e-6)


@pytest.mark.parametrize("shape", NON_SQUARE)
def test_diffusers_2d(shape):
    get_2d_sincos_pos_embed = pytest.importorskip("diffusers.models.embeddings").get_2d_sincos_pos_embed

    for options in ({}, {"base_size": 7, "interpolation_scale": 2.0}, {"cls_token": True, "extra_tokens": 2},
                    {"cls_token": True}, {"extra_tokens": 3}):
        theirs = get_2d_sincos_pos_embed(24, shape, **options).numpy()
        ours = posenc.grid_encoding(shape, 24, convention="diffusers", **options)
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)  # positions rounded to float32 there


def test_diffusers_3d():
    get_3d_sincos_pos_embed = pytest.importorskip("diffusers.models.embeddings").get_3d_sincos_pos_embed

    t, h, w, d = 3, 4, 6, 32
    for options in ({}, {"spatial_interpolation_scale": 1.5, "temporal_interpolation_scale": 0.5}):
        theirs = get_3d_sincos_pos_embed(d, (w, h), t, **options)
        ours = posenc.grid_encoding((t, h, w), d, convention="diffusers", **options)
        np.testing.assert_allclose(ours, theirs.numpy().reshape(t * h * w, d), rtol=0, atol=2e-7)
    # the first quarter encodes the frame only: equal across the h * w tokens of a frame
    frames = ours.reshape(t, h * w, d)[..., : d // 4]
    assert np.array_equal(frames, np.broadcast_to(frames[:, :1], frames.shape))


# --- against our re-expressions ----------------------------------------------------------

REEXPRESSED = {
    "mae": lambda h, w, d: mae_reference(h, w, d),
    "moco-v3": moco_reference,
    "big_vision": big_vision_reference,
    "simple-vit": simple_vit_reference,
    "timm": timm_reference,
    "detr": detr_reference,
}


@pytest.mark.parametrize("name", sorted(REEXPRESSED))
@pytest.mark.parametrize("shape", NON_SQUARE + [(4, 4), (16, 12)])
@pytest.mark.parametrize("d", DS)
@needs_torch
def test_reexpressed_sources(name, shape, d):
    reference = REEXPRESSED[name](*shape, d)
    np.testing.assert_allclose(posenc.grid_encoding(shape, d, convention=name), reference, rtol=0, atol=2e-7)
    np.testing.assert_allclose(posenc.grid_encoding(shape, d, convention=name, dtype=np.float64), reference,
                               rtol=0, atol=1e-14)


@pytest.mark.parametrize("options", [{}, {"reverse_coord": True}, {"interleave_sin_cos": True},
                                     {"reverse_coord": True, "interleave_sin_cos": True}, {"temperature": 50.0}])
@needs_torch
def test_timm_options(options):
    np.testing.assert_allclose(posenc.grid_encoding((3, 7), 16, convention="timm", **options),
                               timm_reference(3, 7, 16, **options), rtol=0, atol=2e-7)


def test_half_precision_is_one_rounding_of_float32():
    single = posenc.grid_encoding((5, 7), 32, convention="detr", normalize=True)
    half = posenc.grid_encoding((5, 7), 32, convention="detr", normalize=True, dtype=np.float16)
    assert half.dtype == np.float16 and np.array_equal(half, single.astype(np.float16))


def test_mae_class_row_and_detr_options():
    np.testing.assert_allclose(posenc.grid_encoding((3, 5), 16, convention="mae", cls_token=True),
                               mae_reference(3, 5, 16, cls_token=True), atol=2e-7)
    np.testing.assert_allclose(posenc.grid_encoding((3, 5), 16, convention="detr", normalize=True, scale=1.0),
                               detr_reference(3, 5, 16, normalize=True, scale=1.0), atol=2e-7)
    assert posenc.grid_encoding((3, 5), 16, convention="moco-v3", cls_token=False).shape == (15, 16)


def test_accuracy_against_mpmath():
    # Entries of large grids, float32 against 40 digits: within 2e-7. float64: within 1e-13, as the
    # fractional positions are themselves rounded to float64 (angles up to 300: 300 * 2**-53 each).
    rng = np.random.default_rng(0)
    h, w, d = 150, 200, 64
    tables = {dt: posenc.grid_encoding((h, w), d, convention="detr", normalize=True, scale=300.0, dtype=dt)
              for dt in (np.float32, np.float64)}
    mae = posenc.grid_encoding((h, w), d, convention="mae")
    for k, c in zip(rng.integers(0, h * w, 300).tolist(), rng.integers(0, d, 300).tolist()):
        y, x = divmod(k, w)
        with mpmath.workdps(40):
            # DETR: channel c < d/2 encodes y; frequency T^(-2 (i // 2) / F), sin at even i.
            i, pos, n = (c, y, h) if c < d // 2 else (c - d // 2, x, w)
            p = mpmath.mpf(pos + 1) / (n + mpmath.mpf("1e-6")) * 300
            angle = p / mpmath.power(10000, mpmath.mpf(2 * (i // 2)) / (d // 2))
            exact = float(mpmath.sin(angle) if i % 2 == 0 else mpmath.cos(angle))
            # MAE: [sin x, cos x, sin y, cos y], F = d/4 frequencies 10000^(-j/F).
            block, j = divmod(c, d // 4)
            q = mpmath.mpf(x if block < 2 else y) / mpmath.power(10000, mpmath.mpf(j) / (d // 4))
            exact_mae = float(mpmath.sin(q) if block % 2 == 0 else mpmath.cos(q))
        assert abs(tables[np.float32][k, c] - exact) <= 2e-7
        assert abs(tables[np.float64][k, c] - exact) <= 1e-13
        assert abs(mae[k, c] - exact_mae) <= 2e-7


# --- the known bugs ----------------------------------------------------------------------


def test_mae_emb_h_encodes_the_width():
    # MAE's first half ("emb_h") is the same for every patch of a column: it encodes x.
    h, w, d = 3, 5, 16
    first_half = mae_reference(h, w, d)[:, : d // 2].reshape(h, w, d // 2)
    assert np.array_equal(first_half, np.broadcast_to(first_half[:1], first_half.shape))
    assert not np.allclose(first_half[:, 0], first_half[:, 1])
    # transformers' 5.x builder puts h first: on a 2 x 3 grid at d 8 the two differ by up to 1.42
    diff = posenc.grid_encoding((2, 3), 8, convention="mae") - posenc.grid_encoding((2, 3), 8, convention="rt-detr")
    assert round(float(np.abs(diff).max()), 2) == 1.42


def x_positions(table, d):
    # The position each token's x block claims (frequency 1: column 0 sine, column d/4 cosine).
    return np.round(np.arctan2(table[:, 0], table[:, d // 4])).astype(int)


@pytest.mark.parametrize(("shape", "first_four"), [((3, 4), [0, 0, 0, 1]), ((3, 2), [0, 0, 0, 1])])
@needs_torch
def test_buggy_flattening_on_non_square_grids(shape, first_four):
    # transformers #41380: the first four pixels of a 3 x 4 grid (width 4) got x 0, 0, 0, 1.
    h, w = shape
    buggy = moco_reference(h, w, 16)[1:]  # MoCo v3's and RT-DETR's old code
    assert list(x_positions(buggy, 16)[:4]) == first_four
    assert list(x_positions(posenc.grid_encoding(shape, 16, convention="mae"), 16)) == list(grid_yx(h, w)[1].astype(int))
    # the same table is what posenc's "moco-v3" writes, and identify names it
    np.testing.assert_allclose(posenc.grid_encoding(shape, 16, convention="moco-v3")[1:], buggy, atol=2e-7)


@needs_torch
def test_buggy_flattening_is_invisible_on_square_grids():
    # On a square grid the width-outer flattening is a valid table: RT-DETR's fixed one exactly.
    buggy = moco_reference(6, 6, 32)[1:]
    np.testing.assert_allclose(posenc.grid_encoding((6, 6), 32, convention="rt-detr"), buggy, atol=2e-7)
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(posenc.grid_encoding((4, 9), 32, convention="rt-detr"), moco_reference(4, 9, 32)[1:], atol=1e-3)


# --- identify and diagnose ---------------------------------------------------------------


@pytest.mark.parametrize("name", list(grid.list_grid_conventions()))
@pytest.mark.parametrize("prefix", [0, 1])
@needs_torch
def test_identify_every_convention_on_a_non_square_grid(name, prefix):
    table = posenc.grid_encoding((5, 7), 32, convention=name)
    table = table[-35:]
    if prefix:
        table = np.concatenate([np.zeros((1, 32), np.float32), table])
    found = posenc.identify_grid(torch.from_numpy(table)[None], (5, 7))
    assert name in found.matches[0] or name in " ".join(found.matches)
    assert (found.prefix_rows, found.prefix_zeros) == (prefix, True)
    # the same-number twins are named together; nothing else is
    twins = {"big_vision": {"big_vision", "simple-vit"}, "simple-vit": {"big_vision", "simple-vit"},
             "moco-v3": {"moco-v3", "timm, reverse_coord=True, interleave_sin_cos=True"},
             "rt-detr": {"rt-detr", "timm, interleave_sin_cos=True"}}
    assert set(found.matches) == twins.get(name, {name})


@needs_torch
def test_identify_options_and_source_tables():
    found = posenc.identify_grid(timm_reference(4, 6, 16, interleave_sin_cos=False), (4, 6))
    assert found.matches == ("timm",)
    assert posenc.identify_grid(detr_reference(4, 6, 16, normalize=True), (4, 6)).matches == ("detr, normalize=True",)
    get_2d_sincos_pos_embed = pytest.importorskip("diffusers.models.embeddings").get_2d_sincos_pos_embed

    scaled = get_2d_sincos_pos_embed(16, (4, 6), base_size=3, interpolation_scale=2.0).numpy()
    assert posenc.identify_grid(scaled, (4, 6)).matches == ("diffusers, base_size / interpolation_scale=1.5",)
    assert str(posenc.identify_grid(mae_reference(4, 6, 16, cls_token=True), (4, 6))).startswith(
        "mae after 1 prefix row (zeros); max deviation ")
    none = posenc.identify_grid(np.ones((24, 16)), (4, 6))
    assert none.matches == () and str(none).startswith("none (closest:")


@needs_torch
def test_diagnose_grid_mistakes():
    h, w, d = 4, 6, 16
    swapped_shape = posenc.grid_encoding((w, h), d, convention="mae")
    findings = posenc.diagnose_grid(swapped_shape, (h, w), "mae").findings
    assert findings == ("mae: height and width swapped: the table was built for a 6 x 4 grid: (width, height) "
                        "passed where (height, width) was meant",)
    flattened = moco_reference(h, w, d)[1:]  # MAE's blocks, flattened width-outer
    assert [f.split(":")[1].strip() for f in posenc.diagnose_grid(flattened, (h, w), "mae").findings] == [
        "wrong flattening order"]
    blocks = posenc.grid_encoding((h, w), d, convention="rt-detr")  # y first where MAE has x first
    assert [f.split(":")[1].strip() for f in posenc.diagnose_grid(blocks, (h, w), "mae").findings] == [
        "axes stacked in the wrong order"]
    assert posenc.diagnose_grid(posenc.grid_encoding((h, w), d), (h, w), "mae").findings == ()
    # on a square grid the wrong flattening and the swapped blocks are the same table
    square = posenc.diagnose_grid(moco_reference(5, 5, d)[1:], (5, 5), "mae").findings
    assert len(square) == 3 and square[-1].endswith("a non-square grid tells them apart")


# --- resampling --------------------------------------------------------------------------


@pytest.mark.parametrize(("old", "new"), [((4, 6), (8, 12)), ((6, 8), (3, 5)), ((5, 5), (7, 3))])
@pytest.mark.parametrize("interpolation", ["bicubic", "bilinear"])
@needs_torch
def test_resample_equals_timm(old, new, interpolation):
    from posenc.torch import resample_abs_pos_embed

    table = torch.randn(1, 1 + old[0] * old[1], 16, generator=torch.Generator().manual_seed(0))
    ours = resample_abs_pos_embed(table, new, old, interpolation=interpolation)
    assert torch.equal(ours, timm_resample_reference(table, new, old, interpolation=interpolation))
    assert torch.equal(ours[:, 0], table[:, 0])  # the class token's row is kept
    assert torch.equal(resample_abs_pos_embed(table[0], new, old, interpolation=interpolation), ours[0])
    double = resample_abs_pos_embed(table[:, 1:].double(), new, old, num_prefix_tokens=0, antialias=False)
    assert double.dtype == torch.float64
    assert torch.equal(double, timm_resample_reference(table[:, 1:].double(), new, old, 0, antialias=False))


@pytest.mark.parametrize(("old", "new"), [((3, 5), (7, 4)), ((2, 8), (4, 4)), ((5, 5), (9, 9)), ((7, 3), (3, 7))])
@pytest.mark.parametrize("interpolation", ["bicubic", "bilinear"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("prefix", [0, 1, 2])
@needs_torch
def test_resample_align_corners_equals_timm(old, new, interpolation, align_corners, prefix):
    from posenc.torch import resample_abs_pos_embed

    table = torch.randn(1, prefix + old[0] * old[1], 12, generator=torch.Generator().manual_seed(1))
    for antialias in (True, False):
        ours = resample_abs_pos_embed(table, new, old, num_prefix_tokens=prefix, interpolation=interpolation,
                                      antialias=antialias, align_corners=align_corners)
        assert torch.equal(ours, timm_resample_reference(table, new, old, prefix, interpolation, antialias, align_corners))
        assert ours.shape == (1, prefix + new[0] * new[1], 12)
        assert torch.equal(ours[:, :prefix], table[:, :prefix])
    # align_corners=True puts the corners of the new grid on those of the old one: its corner rows are the old ones
    grid = ours[0, prefix:].reshape(*new, -1)
    old_grid = table[0, prefix:].reshape(*old, -1)
    corners = [(0, 0), (0, -1), (-1, 0), (-1, -1)]
    assert all(torch.allclose(grid[c], old_grid[c], atol=1e-6) for c in corners) or not align_corners


@needs_torch
def test_resample_keeps_only_an_equal_size():
    from posenc.torch import resample_abs_pos_embed

    # 16 tokens as 2 x 8 asked for 4 x 4: timm 1.0.31 resamples (older timm returned the table unchanged)
    table = torch.randn(1, 1 + 16, 8, generator=torch.Generator().manual_seed(2))
    resized = resample_abs_pos_embed(table, (4, 4), (2, 8))
    assert not torch.equal(resized, table)
    assert torch.equal(resized, timm_resample_reference(table, (4, 4), (2, 8)))
    assert resample_abs_pos_embed(table, (4, 4)) is table  # old_size None: taken as square, as timm
    assert resample_abs_pos_embed(table, (2, 8), (2, 8)) is table
    with pytest.raises(TypeError, match="align_corners must be True or False, got 1"):
        resample_abs_pos_embed(table, (4, 4), (2, 8), align_corners=1)
    # A batch of tables, or a table without its token axis, is not timm's posemb.
    for shape in [(2, 17, 8), (17,), (1, 1, 17, 8)]:
        with pytest.raises(ValueError) as caught:
            resample_abs_pos_embed(torch.zeros(shape), (4, 4), (4, 4))
        assert str(caught.value) == f"posemb must have shape (1, tokens, d) or (tokens, d), got {shape}"


@needs_torch
def test_recomputing_is_exact_where_interpolating_is_not():
    from posenc.torch import resample_abs_pos_embed

    old, new, d = (6, 8), (12, 16), 32
    table = posenc.torch.grid_encoding(old, d, convention="mae", dtype=torch.float64)
    interpolated = resample_abs_pos_embed(table, new, old, num_prefix_tokens=0).numpy()
    # interpolate (align_corners=False) samples the old grid at (i + 0.5) * old / new - 0.5
    stretched = [(np.arange(n) + 0.5) * o / n - 0.5 for o, n in zip(old, new)]
    exact = posenc.grid_encoding(new, d, convention="mae", dtype=np.float64, positions=stretched)
    error = np.abs(interpolated - exact).max(axis=0)
    assert error.max() > 0.05  # the highest frequencies (1 radian per patch) are worst
    assert error[d // 4 - 1] < 1e-3  # the slowest are nearly right
    assert np.abs(posenc.grid_encoding(new, d, convention="mae", positions=stretched) - exact).max() < 2e-7


# --- fronts and errors -------------------------------------------------------------------


@needs_torch
def test_torch_and_tensorflow_fronts():
    import posenc.torch

    ours = posenc.grid_encoding((3, 5), 16, convention="detr", normalize=True)
    assert torch.equal(posenc.torch.grid_encoding((3, 5), 16, convention="detr", normalize=True), torch.from_numpy(ours))
    assert posenc.torch.grid_encoding((3, 5), 16, dtype=torch.bfloat16).dtype == torch.bfloat16
    tf = pytest.importorskip("tensorflow")
    import posenc.tensorflow

    out = posenc.tensorflow.grid_encoding((3, 5), 16, convention="detr", normalize=True)
    assert out.dtype == tf.float32 and np.array_equal(out.numpy(), ours)
    assert posenc.tensorflow.grid_encoding((2, 3, 5), 32, convention="diffusers", dtype=tf.float64).shape == (30, 32)


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: posenc.grid_encoding((3, 5), 18), ValueError, "d must be a multiple of 4 for convention 'mae' (MAE asserts"),
    (lambda: posenc.grid_encoding((3, 5), 18, convention="detr"), ValueError, "DETR's torch.stack"),
    (lambda: posenc.grid_encoding((2, 3, 5), 24, convention="diffusers"), ValueError, "multiple of 16"),
    (lambda: posenc.grid_encoding((2, 3, 5), 32), ValueError, "convention 'mae' is 2-D only"),
    (lambda: posenc.grid_encoding((3, 5), 4, convention="big_vision"), ValueError, "convention 'big_vision' needs d >= 8"),
    (lambda: posenc.grid_encoding((3, 5), 4, convention="simple-vit"), ValueError, "convention 'simple-vit' needs d >= 8"),
    (lambda: posenc.grid_encoding(5, 16), TypeError, "shape must be a tuple (height, width)"),
    (lambda: posenc.grid_encoding((5,), 16), ValueError, "got (5,)"),
    (lambda: posenc.grid_encoding((0, 5), 16), ValueError, "each size in shape must be an int >= 1, got 0"),
    (lambda: posenc.grid_encoding((3, 5), 16.0), TypeError, "d must be an int >= 1, got 16.0"),
    (lambda: posenc.grid_encoding((3, 5), 16, convention="vit"), ValueError, "convention must be one of 'mae'"),
    (lambda: posenc.grid_encoding((3, 5), 16, temperature=5.0), TypeError, "takes the options cls_token; got temperature"),
    (lambda: posenc.grid_encoding((3, 5), 16, convention="detr", bogus=1), TypeError,
     "convention 'detr' takes the options temperature, normalize, scale, offset; got bogus"),
    (lambda: posenc.grid_encoding((3, 5), 16, convention="positional-encodings", bogus=1), TypeError,
     "convention 'positional-encodings' takes the options none; got bogus"),
    (lambda: posenc.grid_encoding((3, 5), 16, convention="detr", scale=3.0), ValueError, "needs normalize=True"),
    (lambda: posenc.grid_encoding((3, 5), 16, positions=[np.arange(3)]), ValueError, "one array per axis"),
    (lambda: posenc.identify_grid(np.zeros((10, 16)), (3, 5)), ValueError, "fewer than the 15 tokens"),
    # an option of the learner's own convention is read, not skipped as it is among every convention's
    (lambda: posenc.diagnose_grid(posenc.grid_encoding((2, 3), 8), (2, 3), "mae", temperature=5.0), TypeError,
     "convention 'mae' takes the options cls_token; got temperature"),
])
def test_bad_arguments(call, error, message):
    with pytest.raises(error) as caught:
        call()
    assert message in str(caught.value)


def test_each_convention_carries_the_name_it_is_registered_under():
    """The name messages give (as above, "convention 'big_vision' needs d >= 8"), for 2-D and 3-D builders."""
    from posenc.sinusoidal import grid

    for name, preset in grid._PRESETS.items():
        for build in filter(None, (preset.build, preset.build_3d)):
            assert build()[0].name == name


def test_diagnose_grid_names_its_mistakes_as_codes_in_every_language():
    table = posenc.grid_encoding((10, 6), 64, convention="mae")  # built for the shape (W, H)
    for language in ("en", "pt_BR", "zh_CN"):
        found = posenc.diagnose_grid(table, (6, 10), "mae", language=language)
        assert found.mistakes == (("mae", "height and width swapped"),) and len(found.findings) == 1


def test_source_options_name_the_argument():
    with pytest.raises(ValueError, match="pos_embed_max_size must be at least each size of shape, got 4 for a size 5"):
        posenc.grid_encoding((5, 3), 16, convention="diffusers", pos_embed_max_size=4)
    with pytest.raises(TypeError, match="pos_embed_max_size must be an int >= 1"):
        posenc.grid_encoding((5, 3), 16, convention="diffusers", pos_embed_max_size=4.5)
    with pytest.raises(ValueError, match="offset=-0.5 needs normalize=True"):
        posenc.grid_encoding((5, 3), 16, convention="detr", offset=-0.5)
    with pytest.raises(TypeError, match="convention 'mae' takes the options cls_token; got offset"):
        posenc.grid_encoding((5, 3), 16, convention="mae", offset=-0.5)
    with pytest.raises(ValueError, match="num_prefix_tokens must be a non-negative int, got -1"):
        patch_positions((2, 2), num_prefix_tokens=-1)
    with pytest.raises(ValueError, match="grid_offset must be a finite real number, got inf"):
        patch_positions((2, 2), grid_offset=math.inf)


@pytest.mark.parametrize("name", ["base_size", "interpolation_scale"])
def test_diffusers_scales_are_finite_and_positive(name):
    # 10**400 has no float64: it once passed the check and divided the positions into NaN.
    for bad in (0, -1.5, math.nan, math.inf, 10**400):
        with pytest.raises(ValueError, match=f"^{name} must be a finite real number > 0, got {bad!r}$"):
            posenc.grid_encoding((2, 3), 8, convention="diffusers", **{name: bad})
    for bad in ("16", True, None):
        with pytest.raises(TypeError, match=f"^{name} must be a real number > 0, got {bad!r} "):
            posenc.grid_encoding((2, 3), 8, convention="diffusers", **{name: bad})
