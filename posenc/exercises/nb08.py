"""Exercises of notebook 08 (rotary position embedding, RoPE)."""

import math

import numpy as np
import torch

from ..language import N_
from . import Exercise, _, compare_arrays, _one_number

__all__ = ["half_rows", "llama3_wavelength", "rotated_query"]


# Exercise 1: rotate one query by hand, half layout.


def rotated_query_solution():
    q = torch.arange(1.0, 9.0, dtype=torch.float64)  # one head of 8 channels: 1, 2, ..., 8
    p, d = 3, 8
    freqs = p * 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # p * w_j, j = 0..3
    cos, sin = torch.cat((freqs, freqs)).cos(), torch.cat((freqs, freqs)).sin()  # channel j and j + 4: pair j
    q1, q2 = q.chunk(2)
    return q * cos + torch.cat((-q2, q1)) * sin  # x * cos + rotate_half(x) * sin


def _rotated(*, pairs="half", tables="half", sign=1, exponent=2, swap=False):
    q = torch.arange(1.0, 9.0, dtype=torch.float64)
    freqs = 3 * 10000.0 ** (-exponent * torch.arange(4, dtype=torch.float64) / 8)
    angles = torch.cat((freqs, freqs)) if tables == "half" else freqs.repeat_interleave(2)
    cos, sin = angles.cos(), angles.sin()
    if pairs == "half":
        q1, q2 = q.chunk(2)
        turned = torch.cat((-q2, q1))
    else:  # GPT-J's rotate_every_two: (x0, x1) -> (-x1, x0) for each neighbouring pair
        turned = torch.stack((-q[1::2], q[0::2]), dim=1).flatten()  # (4, 2): pair by pair
    if swap:
        cos, sin = sin, cos
    return q * cos + sign * turned * sin


rotated_query = Exercise(
    "rotated_query",
    rotated_query_solution,
    N_("w_j = 10000 ** (-2j / 8) for j = 0..3; cos = cat(cos(p w), cos(p w)), the same for sin; "
       "rotate_half(x) = cat(-x2, x1) for the halves x1, x2; then x * cos + rotate_half(x) * sin"),
    mistakes=[
        (
            N_("rotate_half is cat(-x2, x1): with cat(x2, -x1) every pair turns by -p w_j, backwards "
               "(the score then depends on p - s with the wrong sign, and a checkpoint's attention breaks)"),
            lambda: _rotated(sign=-1),
        ),
        (
            N_("you paired channel 2j with 2j + 1: that is the interleaved layout (GPT-J, Meta's reference); "
               "the half layout pairs channel j with j + d/2"),
            lambda: _rotated(pairs="interleaved", tables="interleaved"),
        ),
        (
            N_("a mix of the layouts: your cos and sin repeat each frequency twice in a row (the interleaved "
               "tables, repeat_interleave) but rotate_half pairs channel j with j + d/2; build them as cat(freqs, freqs)"),
            lambda: _rotated(tables="interleaved"),
        ),
        (
            N_("a mix of the layouts: your cos and sin are the half tables, cat(freqs, freqs), but you turned "
               "neighbouring channels (2j, 2j + 1) as the interleaved layout does; use rotate_half"),
            lambda: _rotated(pairs="interleaved"),
        ),
        (
            N_("your frequencies are 10000^(-j/d); RoPE's are 10000^(-2j/d), i.e. torch.arange(0, d, 2) / d"),
            lambda: _rotated(exponent=1),
        ),
        (N_("cos and sin are swapped: x * cos + rotate_half(x) * sin"), lambda: _rotated(swap=True)),
    ],
    praise=N_("Channel j and channel j + 4 turned together, by 3 w_j, the way transformers' Llama does it."),
)


# Exercise 2: the row order that moves Meta's interleaved q/k weights to the half layout.


def half_rows_solution(heads, head_dim):
    rows = np.arange(heads * head_dim).reshape(heads, head_dim // 2, 2)  # [head, pair j, member of the pair]
    return rows.transpose(0, 2, 1).ravel()  # [head, member, pair j]: first members, then second members


def _inverse(heads, head_dim):
    return np.argsort(half_rows_solution(heads, head_dim))


def _across_heads(heads, head_dim):
    return np.arange(heads * head_dim).reshape(heads * head_dim // 2, 2).T.ravel()  # the pairs' first members, then the second


def compare_rows(got, expected):
    """What is wrong with the row order ``got``; None when it is ``expected``."""
    if got is None or got is Ellipsis:
        return compare_arrays(got, expected)
    got = np.asarray(got.detach().cpu() if hasattr(got, "detach") else got)
    if got.shape != expected.shape:
        return _("your order has shape {got}, expected {expected}: one index per row of W_q (heads * head_dim)").format(
            got=got.shape, expected=expected.shape)
    if not np.issubdtype(got.dtype, np.integer) or not np.array_equal(np.sort(got), np.arange(len(expected))):
        # Translators: {last} is the last row's number: "the rows 0..15".
        return _("your order is not a permutation of the rows 0..{last}: each row must be taken exactly once").format(
            last=len(expected) - 1)
    k = int(np.argmax(got != expected))
    if got[k] == expected[k]:
        return None
    return _("row {k} of the half layout should be Meta's row {theirs}; yours takes row {yours}").format(
        k=k, theirs=int(expected[k]), yours=int(got[k]))


half_rows = Exercise(
    "half_rows",
    half_rows_solution,
    N_("within each head, the half layout lists the first member of every pair (Meta's rows 0, 2, 4, ...), "
       "then the second members (rows 1, 3, 5, ...); reshape to (heads, head_dim // 2, 2) and swap the last two axes"),
    cases=[(4, 8), (2, 16)],
    argument_names=["heads", "head_dim"],
    compare=compare_rows,
    mistakes=[
        (
            N_("this is the inverse permutation (half -> interleaved): W_half = W_meta[perm] needs, at each row of the "
               "half layout, the Meta row it comes from"),
            _inverse,
        ),
        (
            N_("you permuted all heads * head_dim rows at once: the pairs, and the two halves, live inside each head; "
               "permute each head's block of head_dim rows on its own"),
            _across_heads,
        ),
        (
            N_("this is Meta's order unchanged: rotate_half would pair row j with row j + head_dim/2 of each head, "
               "which Meta's checkpoint never trained as a pair"),
            lambda heads, head_dim: np.arange(heads * head_dim),
        ),
    ],
    praise=N_("It is the order of transformers' Llama conversion script: view(heads, head_dim // 2, 2).transpose(1, 2)."),
)


# Exercise 3: the llama3 rule by hand.


def llama3_wavelength_solution():
    head_dim, base, j = 128, 500000.0, 32  # Llama 3.1's heads, rope_theta, the pair asked about
    factor, low, high, L = 8.0, 1.0, 4.0, 8192  # factor, low_freq_factor, high_freq_factor, original length
    w = base ** (-2 * j / head_dim)
    wavelength = 2 * math.pi / w  # 4443: between L / high = 2048 and L / low = 8192, so blended
    smooth = (L / wavelength - low) / (high - low)  # 0 at L / low (stretched), 1 at L / high (kept)
    w_new = (1 - smooth) * w / factor + smooth * w  # the blend is of frequencies
    return 2 * math.pi / w_new


def _llama3(*, blended_wavelengths=False, reversed_ramp=False, base=500000.0, as_frequency=False, full=False, kept=False):
    # kept: the pair left as it is, as llama3 keeps wavelengths below L / high_freq_factor = 2048
    # (base 10000's pair 32, wavelength 628, is one)
    w = base ** (-64 / 128)
    wavelength = 2 * math.pi / w
    if kept:
        w_new = w
    elif full:
        w_new = w / 8
    else:
        smooth = (8192 / wavelength - 1) / 3
        if reversed_ramp:
            smooth = 1 - smooth
        if blended_wavelengths:
            w_new = 2 * math.pi / ((1 - smooth) * 8 * wavelength + smooth * wavelength)
        else:
            w_new = (1 - smooth) * w / 8 + smooth * w
    return w_new if as_frequency else 2 * math.pi / w_new


def compare_number(got, expected, rtol=1e-6):
    """What is wrong with the number ``got``; None when it is within ``rtol`` of ``expected``."""
    if got is None or got is Ellipsis:
        return compare_arrays(got, expected)
    value, problem = _one_number(got)
    if value is None:
        return problem
    if math.isclose(value, expected, rel_tol=rtol):
        return None
    return _("{value} is not it (the check allows a relative difference of {rtol}); the hint gives the rule").format(
        value=f"{value:.6g}", rtol=f"{rtol:g}")


llama3_wavelength = Exercise(
    "llama3_wavelength",
    llama3_wavelength_solution,
    N_("w_32 = 500000 ** (-64 / 128); its wavelength 2 pi / w_32 lies between L / high_freq_factor = 2048 and "
       "L / low_freq_factor = 8192, so smooth = (L / wavelength - 1) / (4 - 1) and "
       "w' = (1 - smooth) * w / 8 + smooth * w; answer 2 pi / w'"),
    compare=compare_number,
    mistakes=[
        (
            N_("that is the default wavelength 2 pi / w_32: pair 32's wavelength (4443) lies between L/4 = 2048 and "
               "L = 8192, where llama3 blends the kept and the stretched frequency"),
            lambda: _llama3(kept=True),
        ),
        (
            N_("you stretched by the full factor 8: only wavelengths above L / low_freq_factor = 8192 get it, and "
               "pair 32's (4443) is in the blend"),
            lambda: _llama3(full=True),
        ),
        (
            N_("you blended the wavelengths; llama3 blends the frequencies, (1 - smooth) * w / factor + smooth * w, "
               "and the wavelength is 2 pi over the result"),
            lambda: _llama3(blended_wavelengths=True),
        ),
        (
            N_("the blend runs the other way: smooth = (L / wavelength - low_freq_factor) / (high - low) is the weight "
               "of the kept frequency w, and 1 - smooth that of the stretched w / factor"),
            lambda: _llama3(reversed_ramp=True),
        ),
        (N_("that is a frequency (radians per position); the wavelength is 2 pi / w'"), lambda: _llama3(as_frequency=True)),
        (
            N_("Llama 3.1's base (rope_theta) is 500000, not 10000: with 10000, pair 32 is fast enough to be kept"),
            lambda: _llama3(base=10000.0, kept=True),
        ),
    ],
    praise=N_("posenc.rotary_frequencies(128, 500000, rope_type='llama3', ...) gives the same."),
)
