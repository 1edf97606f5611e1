"""RoPE of vision models whose code is not installed here, re-expressed from their source (repository,
path, commit cited; timm needs a torchvision that does not install beside this torch), and against
transformers 5.23 where it has the same rule: timm's GenLIP M-RoPE (interleaved sections that do not
add up to half the head).

The re-expressions run in float64, the formula exactly; the sources' float32 arithmetic is off
from it by about ``|angle| * 2**-23``.
"""

import numpy as np
import pytest

from posenc.rope import axial as rg

torch = pytest.importorskip("torch")

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
def test_genlip_mrope_gives_the_remainder_to_time(h, w, dim, section):
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


def test_qwen3_vl_text_rope_takes_the_same_sections():
    # transformers' Qwen3VLTextRotaryEmbedding has the same rule (recomposition_frequencies): head 72, (8, 12, 12).
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
