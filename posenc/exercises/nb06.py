"""Exercises of notebook 06 (precision and speed): the float32 step near an angle, and an
accurate float32 sine at a large position."""

from functools import partial

import numpy as np

from ..language import N_
from . import Exercise, compare_arrays

__all__ = ["accurate_sine", "accurate_sine_solution", "angle_step"]


def angle_step_solution(position, pair, d_model):
    angle = position / 10000.0 ** (2 * pair / d_model)
    step = float(np.spacing(np.float32(angle)))  # the gap to the next float32 above the angle
    return step, step / 2  # rounding to the nearest float32 moves the angle, so the sine, by at most half a step


def _angle(position, pair, d_model, *, per_column=False):
    return position / 10000.0 ** ((pair if per_column else 2 * pair) / d_model)


angle_step = Exercise(
    "angle_step",
    angle_step_solution,
    N_("make the angle position / 10000 ** (2 * pair / d_model), then take np.spacing of it as a float32 "
       "(np.float32(angle)); rounding to the nearest float32 is off by at most half that step"),
    cases=[(32767, 0, 512), (100_000, 3, 512), (1_000_000, 100, 512), (5000, 2, 64)],
    argument_names=["position", "pair", "d_model"],
    compare=partial(compare_arrays, rtol=1e-6, atol=0.0),  # the steps are tiny numbers: compare them relatively
    mistakes=[
        (
            N_("that is the step of float64 numbers (np.spacing of a Python float): convert the angle to np.float32 first"),
            lambda p, i, d: (float(np.spacing(_angle(p, i, d))), float(np.spacing(_angle(p, i, d))) / 2),
        ),
        (
            N_("the step is right, but rounding to the NEAREST float32 moves a value by at most half a step"),
            lambda p, i, d: (float(np.spacing(np.float32(_angle(p, i, d)))),) * 2,
        ),
        (
            N_("np.finfo(np.float32).eps is the step next to 1.0; the step grows with the number: take it at the angle"),
            lambda p, i, d: (float(np.finfo(np.float32).eps), float(np.finfo(np.float32).eps) / 2),
        ),
        (
            N_("that is the step next to the sine's value; the error comes from rounding the ANGLE, a large number"),
            lambda p, i, d: (float(np.spacing(np.float32(np.sin(_angle(p, i, d))))),
                             float(np.spacing(np.float32(np.sin(_angle(p, i, d))))) / 2),
        ),
        (
            N_("the exponent is 2 * pair / d_model (both columns of a pair share it), not pair / d_model"),
            lambda p, i, d: (float(np.spacing(np.float32(_angle(p, i, d, per_column=True)))),
                             float(np.spacing(np.float32(_angle(p, i, d, per_column=True)))) / 2),
        ),
    ],
    praise=N_("Near 32767 float32 angles are 2**-9 apart: the sine can be off by 1e-3 before any sine is taken."),
)


def accurate_sine_solution(position, pair, d_model):
    angle = position * 10000.0 ** (-2 * pair / d_model)  # float64: its step near 1e7 is 2e-9
    reduced = np.remainder(angle, 2 * np.pi)  # the same sine, an angle in [0, 2 pi), still float64
    return np.sin(np.float32(reduced))  # only now float32: steps of at most 5e-7 near 2 pi


def _reduced(angle):
    return np.float32(np.remainder(angle, 2 * np.pi))


def _sine(angle):
    return np.sin(_reduced(angle))


accurate_sine = Exercise(
    "accurate_sine",
    accurate_sine_solution,
    N_("form the angle position * 10000.0 ** (-2 * pair / d_model) in float64, take np.remainder(angle, 2 * np.pi) "
       "while still in float64, and only then convert to np.float32 and take the sine"),
    cases=[(10_000_000, 1, 512), (32767, 1, 512), (100_000, 3, 512), (1_000_000, 20, 512), (5000, 2, 64)],
    argument_names=["position", "pair", "d_model"],
    mistakes=[
        (
            N_("the angle was rounded to float32 BEFORE it was reduced: at a large angle float32 numbers are far apart "
               "(2**-9 near 32767, 1.0 near 1e7); reduce the float64 angle first, then convert"),
            lambda p, i, d: np.sin(np.float32(p * 10000.0 ** (-2 * i / d))),
        ),
        (
            N_("the angle was formed in float32, as the lectures do (float32 position / float32 denominator): "
               "form it in float64 and reduce it before converting to float32"),
            lambda p, i, d: np.sin(np.float32(p) / np.float32(10000.0 ** (2 * i / d))),
        ),
        (
            N_("2 pi itself was rounded to float32 (np.float32(2 * np.pi) is 1.7e-7 too large): each turn removed "
               "adds that error, and a large angle holds many turns; reduce by the float64 2 * np.pi"),
            lambda p, i, d: np.sin(np.float32(np.remainder(p * 10000.0 ** (-2 * i / d), float(np.float32(2 * np.pi))))),
        ),
        (N_("that is the cosine; column 2 * pair holds the sine"), lambda p, i, d: np.cos(_reduced(p * 10000.0 ** (-2 * i / d)))),
        (
            N_("the exponent is 2 * pair / d_model (both columns of a pair share it), not pair / d_model"),
            lambda p, i, d: _sine(p * 10000.0 ** (-i / d)),
        ),
    ],
    praise=N_("Within 3e-7 of posenc.encode at these positions; at position 1e7 the float32 route is off by more than 0.1."),
)
