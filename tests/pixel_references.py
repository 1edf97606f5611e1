"""The sources' pixel-frequency RoPE re-expressed (our code; facts from theirs, each function citing its
repository, path and commit), for rope/test_pixels.py and forensics/test_identify_rope.py. They need
torch: their callers skip without it."""

import numpy as np

try:
    import torch
except ImportError:  # the callers that need torch skip (the torch fixture)
    torch = None


def timm_rotary_reference(feat_shape, dim, max_res=224, linear_bands=False, in_pixels=True, temperature=10000.0,
                          ref_feat_shape=None, grid_offset=0.0, grid_indexing="ij"):
    """huggingface/pytorch-image-models, timm/layers/pos_embed_sincos.py @ aa4b5850c1543fa488abf260f18390eda46cf85d
    (pixel_freq_bands, freq_bands, build_fourier_pos_embed, build_rotary_pos_embed; what RotaryEmbedding and
    RotaryEmbeddingCat return), in float64: num_bands = dim // 4; in_pixels: bands = pi * linspace(1, max_res / 2, n)
    (linear_bands) or pi * 2 ** linspace(0, log2(max_res) - 1, n), positions linspace(-1, 1, s) per axis; else
    bands = 1 / T ** (arange(n) / n), positions arange(s) + grid_offset; ref_feat_shape: t / f * r; 'xy' swaps
    the shapes and meshgrids 'xy'; grid (..., 2, 1) * bands, reshaped (N, 2n), repeat_interleave(2).
    Returns (sin, cos), each (N, dim)."""
    n = dim // 4
    if in_pixels:
        if linear_bands:
            bands = torch.linspace(1.0, max_res / 2, n, dtype=torch.float64) * torch.pi
        else:
            bands = 2 ** torch.linspace(0, np.log2(max_res) - 1, n, dtype=torch.float64) * torch.pi
    else:
        bands = 1.0 / temperature ** (torch.arange(0, n, 1, dtype=torch.float64) / n)
    if grid_indexing == "xy":
        feat_shape = [feat_shape[1], feat_shape[0]]
        ref_feat_shape = None if ref_feat_shape is None else [ref_feat_shape[1], ref_feat_shape[0]]
    if in_pixels:
        t = [torch.linspace(-1.0, 1.0, s, dtype=torch.float64) for s in feat_shape]
    else:
        t = [torch.arange(s, dtype=torch.float64) + grid_offset for s in feat_shape]
    if ref_feat_shape is not None:
        t = [x / f * r for x, f, r in zip(t, feat_shape, ref_feat_shape)]
    grid = torch.stack(torch.meshgrid(t, indexing=grid_indexing), dim=-1).unsqueeze(-1)
    pos = grid * bands
    count = int(np.prod(feat_shape))
    return tuple(f(pos).reshape(count, -1).repeat_interleave(2, -1).numpy() for f in (torch.sin, torch.cos))


def rotary_embedding_torch_reference(h, w, dim, max_freq=10):
    """lucidrains/rotary-embedding-torch, rotary_embedding_torch/rotary_embedding_torch.py
    @ 8bb4643d1c29f944c47d2e807452ac437689af18 (RotaryEmbedding(dim, freqs_for='pixel', max_freq).get_axial_freqs(h, w)),
    in float64: freqs = pi * linspace(1, max_freq / 2, dim // 2); per axis pos = linspace(-1, 1, n), angles
    einsum(pos, freqs) repeated '... n -> ... (n r)', r=2; the axes broadcast and concatenated, (h, w, 2 * dim).
    apply_rotary_emb takes cos and sin of them with its interleaved rotate_half."""
    freqs = torch.linspace(1.0, max_freq / 2, dim // 2, dtype=torch.float64) * torch.pi
    axes = []
    for index, n in enumerate((h, w)):
        angles = (torch.linspace(-1, 1, n, dtype=torch.float64)[:, None] * freqs).repeat_interleave(2, -1)
        axes.append(angles[:, None] if index == 0 else angles[None])
    return torch.cat(torch.broadcast_tensors(*axes), dim=-1)
