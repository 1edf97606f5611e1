"""The sources' 2-D sin-cos tables re-expressed (our code; facts from theirs, each function citing
its repository, path and commit), for sinusoidal/test_grid.py and forensics/test_identify_sources.py.
The torch ones need torch: their callers skip without it."""

import math

import numpy as np

try:
    import torch
except ImportError:  # the callers that need torch skip (needs_torch)
    torch = None


def mae_reference(h, w, d, cls_token=False):
    """facebookresearch/mae, util/pos_embed.py @ a9f5c70165c6ec81ce4036d9c2296ab70b7042f9:
    meshgrid(grid_w, grid_h) (xy indexing, so (h, w) arrays), grid[0] is the column x; the half
    named emb_h encodes grid[0]; each half is [sin, cos] of pos * 1/10000**(j/(D/4)). MAE takes
    a square grid_size; (h, w) as its issue #151 and diffusers generalise it."""
    x, y = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
    omega = 1.0 / 10000.0 ** (np.arange(d // 4) / (d / 4))

    def half(pos):
        angle = pos.reshape(-1)[:, None] * omega
        return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)

    table = np.concatenate([half(x), half(y)], axis=1)  # "emb_h" first: it holds x
    return np.concatenate([np.zeros((1, d)), table]) if cls_token else table


def moco_reference(h, w, d, temperature=10000.0):
    """facebookresearch/moco-v3, vits.py @ 1c6b717e5591bc11ce8a0c093dcdedcd6dc07ca6
    (build_2d_sincos_position_embedding): torch.meshgrid(grid_w, grid_h) with the default ij
    indexing, flattened: the width index is the outer loop. [sin w, cos w, sin h, cos h],
    omega = 1/T**(arange(D/4)/(D/4)); a zero class row first."""
    gw, gh = torch.meshgrid(torch.arange(w, dtype=torch.float64), torch.arange(h, dtype=torch.float64), indexing="ij")
    omega = 1.0 / temperature ** (torch.arange(d // 4, dtype=torch.float64) / (d // 4))
    out_w = gw.flatten()[:, None] * omega
    out_h = gh.flatten()[:, None] * omega
    table = torch.cat([out_w.sin(), out_w.cos(), out_h.sin(), out_h.cos()], dim=1)
    return torch.cat([torch.zeros(1, d, dtype=torch.float64), table]).numpy()


def big_vision_reference(h, w, d, temperature=10000.0):
    """google-research/big_vision, big_vision/models/vit.py @ 0b73d7b02f47d030d61362ef920fed15f36e7bba
    (posemb_sincos_2d, in JAX; here NumPy): y, x = mgrid[:h, :w]; omega = arange(D/4) / (D/4 - 1);
    [sin x, cos x, sin y, cos y]."""
    y, x = np.mgrid[:h, :w]
    omega = 1.0 / temperature ** (np.arange(d // 4) / (d // 4 - 1))
    y = y.reshape(-1)[:, None] * omega
    x = x.reshape(-1)[:, None] * omega
    return np.concatenate([np.sin(x), np.cos(x), np.sin(y), np.cos(y)], axis=1)


def simple_vit_reference(h, w, d, temperature=10000.0):
    """lucidrains/vit-pytorch, vit_pytorch/simple_vit.py @ bdaf2d14916500e2978c49833795ed3b599e220d
    (posemb_sincos_2d): meshgrid(arange(h), arange(w), indexing="ij") -> y, x; omega =
    arange(D/4) / (D/4 - 1); cat(x.sin, x.cos, y.sin, y.cos)."""
    y, x = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    omega = 1.0 / temperature ** (torch.arange(d // 4, dtype=torch.float64) / (d // 4 - 1))
    y = y.flatten()[:, None] * omega[None, :]
    x = x.flatten()[:, None] * omega[None, :]
    return torch.cat((x.sin(), x.cos(), y.sin(), y.cos()), dim=1).numpy()


def timm_reference(h, w, d, temperature=10000.0, reverse_coord=False, interleave_sin_cos=False):
    """huggingface/pytorch-image-models, timm/layers/pos_embed_sincos.py @ 0647e283021a2a7b0c7dc989d10564aa55bbf5e7
    (build_sincos2d_pos_embed): bands 1/T**(arange(D/4)/(D/4)); feat_shape [h, w] (reversed
    by reverse_coord), ndgrid (ij) stacked and flattened to (N, 2); stack([sin, cos]) on dim 1
    (sin sin cos cos) or dim 2 (interleave_sin_cos), flattened."""
    feat_shape = [w, h] if reverse_coord else [h, w]
    bands = 1.0 / temperature ** (torch.arange(d // 4, dtype=torch.float64) / (d // 4))
    axes = torch.meshgrid([torch.arange(s, dtype=torch.float64) for s in feat_shape], indexing="ij")
    coords = torch.stack(axes).flatten(1).transpose(0, 1)
    pos2 = coords.unsqueeze(-1) * bands.unsqueeze(0)
    return torch.stack([pos2.sin(), pos2.cos()], dim=2 if interleave_sin_cos else 1).flatten(1).numpy()


def timm_resample_reference(posemb, new_size, old_size, num_prefix_tokens=1, interpolation="bicubic", antialias=True,
                            align_corners=None):
    """timm 1.0.31 (the PyPI wheel), timm/layers/pos_embed.py (resample_abs_pos_embed; the early return as
    fixed by huggingface/pytorch-image-models#2737, merged after the repository's
    aa4b5850c1543fa488abf260f18390eda46cf85d, 1.0.29.dev0): unchanged only when the token count is and
    old_size equals new_size (or, old_size None, new_size is square); else prefix rows split off and kept,
    the rest reshaped to (1, H, W, d), permuted to (1, d, H, W), F.interpolate(size, mode, align_corners,
    antialias) in float32, permuted back and flattened, prefix concatenated in front."""
    if posemb.shape[1] == new_size[0] * new_size[1] + num_prefix_tokens and tuple(old_size) == tuple(new_size):
        return posemb
    prefix, rest = posemb[:, :num_prefix_tokens], posemb[:, num_prefix_tokens:]
    d = rest.shape[-1]
    image = rest.float().reshape(1, old_size[0], old_size[1], -1).permute(0, 3, 1, 2)
    image = torch.nn.functional.interpolate(image, size=new_size, mode=interpolation, align_corners=align_corners,
                                            antialias=antialias)
    rest = image.permute(0, 2, 3, 1).reshape(1, -1, d).to(posemb.dtype)
    return torch.cat([prefix, rest], dim=1)


def detr_reference(h, w, d, temperature=10000.0, normalize=False, scale=2 * math.pi):
    """facebookresearch/detr, models/position_encoding.py (PositionEmbeddingSine), in float64 and
    with an all-valid mask: y, x = cumsum of the mask (1 .. n), optionally / (n + 1e-6) * scale;
    dim_t = T**(2 (i // 2) / F), F = d / 2; sin of the even, cos of the odd channels, stacked and
    flattened (interleaved); cat(pos_y, pos_x) on the channel axis. Returned as (h*w, d)."""
    f = d // 2
    y, x = np.meshgrid(np.arange(1, h + 1.0), np.arange(1, w + 1.0), indexing="ij")
    if normalize:
        y, x = y / (h + 1e-6) * scale, x / (w + 1e-6) * scale
    dim_t = temperature ** (2 * (np.arange(f) // 2) / f)

    def block(pos):
        angle = pos[..., None] / dim_t
        return np.stack([np.sin(angle[..., 0::2]), np.cos(angle[..., 1::2])], axis=-1).reshape(h, w, f)

    return np.concatenate([block(y), block(x)], axis=-1).reshape(h * w, d)
