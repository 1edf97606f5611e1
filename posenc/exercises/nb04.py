"""Exercises of notebook 04 (why sines and cosines of geometric wavelengths work)."""

import numpy as np

from ..language import N_
from . import Exercise, _

__all__ = ["first_alias", "rotation", "wavelength"]


def wavelength_solution(i, d_model, base):
    frequency = base ** (-2 * i / d_model)  # radians per position of pair i
    return 2 * np.pi / frequency  # positions per full turn


wavelength = Exercise(
    "wavelength",
    wavelength_solution,
    N_("pair i turns by w_i = base^(-2i/d_model) radians per position; one full turn is 2π radians"),
    cases=[(3, 16, 10000.0), (0, 16, 10000.0), (5, 64, 100.0), (7, 16, 10000.0)],
    argument_names=["i", "d_model", "base"],
    mistakes=[
        (
            N_("the exponent of pair i is 2i / d_model, not i / d_model: a pair is two columns, so "
               "the wavelength changes every second column"),
            lambda i, d, b: 2 * np.pi * b ** (i / d),
        ),
        (
            N_("that is the frequency w_i (radians per position); the wavelength is the number of "
               "positions per turn, 2π / w_i"),
            lambda i, d, b: b ** (-2 * i / d),
        ),
        (
            N_("base^(2i/d_model) is the denominator, the positions per radian; a full turn is 2π "
               "radians, so multiply by 2π"),
            lambda i, d, b: b ** (2 * i / d),
        ),
    ],
    praise=N_("Every wavelength is base^(2/d_model) times the one before, from 2π up."),
)


def rotation_solution(k, i, d_model):
    angle = k * 10000.0 ** (-2 * i / d_model)  # pair i turns by k w_i over k positions
    c, s = np.cos(angle), np.sin(angle)
    # sin(a + b) =  cos b sin a + sin b cos a   (the new sine, from (sin a, cos a))
    # cos(a + b) = -sin b sin a + cos b cos a   (the new cosine)
    return np.array([[c, s], [-s, c]])


def _rotation(k, i, d_model, *, transposed=False, per_position=False, signs=(1, -1)):
    angle = k if per_position else k * 10000.0 ** (-2 * i / d_model)
    c, s = np.cos(angle), np.sin(angle)
    m = np.array([[c, signs[0] * s], [signs[1] * s, c]])
    return m.T if transposed else m


rotation = Exercise(
    "rotation",
    rotation_solution,
    N_("write sin(a + b) and cos(a + b) with a = p w_i and b = k w_i; the pair is ordered "
       "(sine, cosine), so the first row gives the new sine from (sin a, cos a)"),
    cases=[(5, 0, 16), (3, 2, 16), (-2.5, 1, 8), (40, 3, 8)],
    argument_names=["k", "i", "d_model"],
    mistakes=[
        (
            N_("this is the transpose, which turns the other way: it takes PE(p) to PE(p - k). The "
               "textbook rotation [[cos, -sin], [sin, cos]] acts on (cos, sin); our pair is (sin, cos)"),
            lambda k, i, d: _rotation(k, i, d, transposed=True),
        ),
        (
            N_("a sign: cos(a + b) = cos a cos b - sin a sin b, so the second row starts with -sin(k w_i)"),
            lambda k, i, d: _rotation(k, i, d, signs=(1, 1)),
        ),
        (
            N_("the angle is k · w_i, not k: pair i turns by w_i = 10000^(-2i/d_model) radians per position"),
            lambda k, i, d: _rotation(k, i, d, per_position=True),
        ),
    ],
    praise=N_("It does not depend on p: the same matrix shifts every position by k."),
)


def distance_by_offset(k, d_model, base):
    """|PE(p + k) - PE(p)| for even d_model, whatever p: sqrt(2 sum_i (1 - cos k w_i))."""
    frequencies = base ** (-np.arange(0, d_model, 2) / d_model)
    return np.sqrt(np.maximum(2 * np.sum(1 - np.cos(np.multiply.outer(k, frequencies)), axis=-1), 0))


def first_alias_solution(d_model, base):
    # far[k]: from PE(p) to PE(p + k)
    far = distance_by_offset(np.arange(1_000_000), d_model, base)  # pragma: no mutate (a longer search, the same k)
    closer = np.flatnonzero(far[2:] < far[1])  # indices into far[2:], from k = 2  # pragma: no mutate (<=: no ties)
    return int(closer[0]) + 2


def _compare_offset(got, expected):
    if got is None or got is Ellipsis:
        return _("your answer is still `...` or None: return a whole number, the offset k")
    try:
        got = int(got)
    except (TypeError, ValueError):
        # Translators: {type} is a Python type name.
        return _("your answer should be a whole number (an offset k), got {type}").format(type=type(got).__name__)
    if got < expected:
        return _("k = {k} is too small: at that offset the row is still farther from PE(p) than the neighbour PE(p + 1)").format(k=got)
    if got > expected:
        return _("k = {k} is too large: a smaller offset already comes closer to PE(p) than the neighbour does").format(k=got)
    return None


first_alias = Exercise(
    "first_alias",
    first_alias_solution,
    N_("far = distance_by_offset(np.arange(N), d_model, base) holds far[k] at index k; the neighbour "
       "is far[1]; look for the first k >= 2 with far[k] < far[1], and mind what an index into a "
       "slice counts from"),
    cases=[(8, 100.0), (8, 10.0), (6, 20.0), (4, 10.0)],
    argument_names=["d_model", "base"],
    mistakes=[
        (
            N_("off by 2: np.argmax or np.flatnonzero on far[2:] counts from 0 at k = 2; add the 2 back"),
            lambda d, b: first_alias_solution(d, b) - 2,
        ),
        (
            N_("off by 1: far[k] is the distance to PE(p + k) when far starts at offset 0 (np.arange(N))"),
            lambda d, b: first_alias_solution(d, b) - 1,
        ),
        (
            N_("that is the longest wavelength, where the slowest pair comes back; the question is when "
               "the whole row comes closer than the neighbour, which can be earlier or later"),
            lambda d, b: round(2 * np.pi * b ** ((d - 2) / d)),
        ),
    ],
    compare=_compare_offset,
    praise=N_("Past that offset two far-apart positions look more alike than neighbours: aliasing."),
)
