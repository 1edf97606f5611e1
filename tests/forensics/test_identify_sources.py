"""identify_grid on the sin-cos tables of real sources, each built by the source's own code (installed
transformers and diffusers; re-expressions of MAE, MoCo v3, big_vision and timm from tests/grid_references.py,
cited there): it must name the convention and the options with which posenc reproduces each.

``named()`` is the measure of issue 29 ("named k of n"): before identify_grid fitted the tables it
named 8 of these 14 (it missed Deformable DETR's offset, Grounding DINO's temperature, a PatchEmbed's
steps beyond pi, SD3's crop, CogVideoX's 3-D scales and big_vision at another temperature); now 14.
"""

import math

import numpy as np
import pytest

import posenc
from posenc.forensics.grids import TOLERANCE

# Every test here builds its tables with the installed sources, hence one skip for the file.
torch = pytest.importorskip("torch")
pytest.importorskip("transformers", minversion="5.0")
embeddings = pytest.importorskip("diffusers.models.embeddings")
from grid_references import big_vision_reference, mae_reference, moco_reference, timm_reference  # noqa: E402

D = 32


def vit_mae():
    from transformers import ViTMAEConfig
    from transformers.models.vit_mae.modeling_vit_mae import ViTMAEEmbeddings

    module = ViTMAEEmbeddings(ViTMAEConfig(hidden_size=D, image_size=40, patch_size=8))
    module.initialize_weights()
    return module.position_embeddings.detach()


def detr_family(module_path, class_name, **options):
    def build(shape):
        module = __import__(module_path, fromlist=[class_name])
        table = getattr(module, class_name).build_sine_position_embedding(
            torch.Size((1, 3, *shape)), torch.device("cpu"), torch.float32, D // 2, scale=2 * math.pi, **options)
        return table[0].reshape(D, -1).T
    return build


def grounding_dino(shape):
    from transformers import GroundingDinoConfig
    from transformers.models.grounding_dino.modeling_grounding_dino import GroundingDinoSinePositionEmbedding

    module = GroundingDinoSinePositionEmbedding(GroundingDinoConfig(d_model=D))
    return module(torch.zeros(1, 3, *shape), torch.ones(1, *shape, dtype=torch.int64))[0].reshape(D, -1).T


def patch_embed_at(shape, sample, largest=None):
    """diffusers' PatchEmbed trained on a sample x sample latent (patch 2), run on a latent of 2 * shape."""
    module = embeddings.PatchEmbed(height=sample, width=sample, patch_size=2, in_channels=4, embed_dim=D,
                                   pos_embed_max_size=largest)
    if largest is not None:
        return module.cropped_pos_embed(2 * shape[0], 2 * shape[1])[0]
    # what its forward adds on a latent of another size: get_2d_sincos_pos_embed at the trained base_size
    return embeddings.get_2d_sincos_pos_embed(D, shape, base_size=module.base_size,
                                              interpolation_scale=module.interpolation_scale)


# (source, shape, builder, what identify must name: every fragment in one match)
SOURCES = [
    ("ViTMAE (transformers)", (5, 5), lambda shape: vit_mae(), ("mae",)),
    ("RT-DETR encoder (transformers)", (4, 7),
     lambda shape: embeddings_rt_detr(*shape), ("rt-detr",)),
    ("DETR, normalize=True as DetrModel (transformers)", (5, 7),
     detr_family("transformers.models.detr.modeling_detr", "DetrSinePositionEmbedding", normalize=True),
     ("detr", "normalize=True")),
    ("Deformable DETR: offset -0.5 (transformers)", (5, 7),
     detr_family("transformers.models.deformable_detr.modeling_deformable_detr", "DeformableDetrSinePositionEmbedding",
                 normalize=True), ("detr", "normalize=True", "offset=-0.5")),
    ("Grounding DINO: temperature 20 (transformers)", (6, 4), grounding_dino, ("detr", "temperature=20")),
    ("PixArt-alpha 1024 (base_size 64, interpolation_scale 2) at 48 x 40 (diffusers)", (48, 40),
     lambda shape: embeddings.get_2d_sincos_pos_embed(D, shape, base_size=64, interpolation_scale=2.0),
     ("diffusers", "base_size / interpolation_scale=32")),
    ("PatchEmbed trained at 64 x 64, run at 6 x 8 patches: steps of 5.3 and 4 (diffusers)", (6, 8),
     lambda shape: patch_embed_at(shape, 64), ("diffusers", "base_size / interpolation_scale=32")),
    ("SD3 PatchEmbed crop (pos_embed_max_size 24, base_size 8) at 9 x 14 (diffusers)", (9, 14),
     lambda shape: patch_embed_at(shape, 16, largest=24), ("diffusers", "pos_embed_max_size=24", "=8")),
    ("CogVideoX 3-D (spatial_interpolation_scale 1.875) (diffusers)", (3, 4, 6),
     lambda shape: embeddings.get_3d_sincos_pos_embed(D, (shape[2], shape[1]), shape[0], spatial_interpolation_scale=1.875,
                                                      temporal_interpolation_scale=1.0).reshape(-1, D),
     ("diffusers", "spatial_interpolation_scale=1.875")),
    ("MAE (facebookresearch/mae)", (4, 6), lambda shape: mae_reference(*shape, D, cls_token=True), ("mae",)),
    ("MoCo v3 (facebookresearch/moco-v3)", (4, 6), lambda shape: moco_reference(*shape, D), ("moco-v3",)),
    ("big_vision posemb_sincos_2d (google-research/big_vision)", (4, 6), lambda shape: big_vision_reference(*shape, D),
     ("big_vision",)),
    ("timm build_sincos2d_pos_embed", (4, 6), lambda shape: timm_reference(*shape, D), ("timm",)),
    ("big_vision at temperature 100", (5, 3), lambda shape: big_vision_reference(*shape, D, temperature=100.0),
     ("big_vision", "temperature=100")),
]


def embeddings_rt_detr(h, w):
    from transformers.models.rt_detr.modeling_rt_detr import build_2d_sinusoidal_position_embedding

    return build_2d_sinusoidal_position_embedding(h, w, D)


def names(found, fragments):
    return any(all(f in match for f in fragments) for match in found.matches)


def named(sources=SOURCES):
    """``(k, n, {source: str(identify_grid(...))})``: how many of the sources' tables identify_grid names right."""
    said = {}
    count = 0
    for source, shape, build, fragments in sources:
        table = np.asarray(build(shape), dtype=np.float32)
        found = posenc.identify_grid(table, shape)
        said[source] = str(found)
        count += names(found, fragments)
    return count, len(sources), said


@pytest.mark.parametrize(("source", "shape", "build", "fragments"), SOURCES, ids=[s[0] for s in SOURCES])
def test_identify_names_each_source(source, shape, build, fragments):
    table = np.asarray(build(shape), dtype=np.float32)
    found = posenc.identify_grid(table, shape)
    assert names(found, fragments), f"{source}: {found}"
    assert found.max_deviation <= TOLERANCE


def test_the_count():
    count, total, said = named()
    assert count == total, said


@pytest.mark.parametrize(("shape", "named_as"), [
    ((3, 4, 1), "diffusers, spatial_interpolation_scale=1.875"),
    ((3, 1, 4), "diffusers, spatial_interpolation_scale=1.875"),
    ((3, 1, 1), "diffusers"),  # every patch at (0, 0): no spatial scale shows, the default is named
])
def test_a_video_one_patch_wide_or_high_is_named_by_its_other_axis(shape, named_as):
    table = embeddings.get_3d_sincos_pos_embed(D, (shape[2], shape[1]), shape[0], spatial_interpolation_scale=1.875,
                                               temporal_interpolation_scale=1.0).reshape(-1, D)
    assert posenc.identify_grid(np.asarray(table, np.float32), shape).matches == (named_as,)


def test_positions_by_hand_when_no_option_names_them():
    # MAE's layout at the centres of the patches: posenc reproduces it with positions passed by hand
    positions = [np.arange(4) + 0.5, np.arange(6) + 0.5]
    found = posenc.identify_grid(posenc.grid_encoding((4, 6), D, convention="mae", positions=positions), (4, 6))
    assert "mae, positions (y: 0.5 + 1 k; x: 0.5 + 1 k)" in found.matches
    # a name is preferred: diffusers' scaled table is not reported as MAE's with positions by hand
    scaled = embeddings.get_2d_sincos_pos_embed(D, (4, 6), base_size=3, interpolation_scale=2.0).numpy()
    assert posenc.identify_grid(scaled, (4, 6)).matches == ("diffusers, base_size / interpolation_scale=1.5",)
