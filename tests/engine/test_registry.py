"""The one registry behind every preset table (posenc.engine.registry)."""

import numpy as np
import pytest

import posenc
from posenc.engine.registry import Registry
from posenc.rope import axial, configs, rotary
from posenc.sinusoidal import conventions, grid


def test_entries_keep_their_order_and_the_decorator_returns_what_it_registers():
    shapes = Registry("shape")
    shapes.register("square", 4)

    @shapes.register("triangle")
    def triangle():
        return 3

    assert shapes.names() == ("square", "triangle") == tuple(shapes)
    assert shapes["triangle"] is triangle and triangle() == 3
    assert shapes.lookup("square") == 4 and len(shapes) == 2 and "circle" not in shapes
    with pytest.raises(KeyError):
        shapes["circle"]  # a Mapping: an unknown key is a KeyError, as in a dict


def test_a_name_is_registered_once():
    shapes = Registry("shape")
    shapes.register("square", 4)
    with pytest.raises(ValueError) as caught:
        shapes.register("square", 5)
    assert str(caught.value) == "shape 'square' is registered already"
    assert shapes["square"] == 4


@pytest.mark.parametrize("name, argument, message", [
    ("circle", None, "shape must be one of 'square', 'triangle'; got 'circle'"),
    ("circle", "config.shape", "config.shape must be one of 'square', 'triangle'; got 'circle'"),
    (np.array([]), None, "shape must be one of 'square', 'triangle'; got array([], dtype=float64) (ndarray)"),
])
def test_an_unknown_name_is_the_choice_error(name, argument, message):
    shapes = Registry("shape")
    shapes.register("square", 4)
    shapes.register("triangle", 3)
    for call in (shapes.lookup, shapes.check):
        with pytest.raises(ValueError) as caught:
            call(name, argument)
        assert str(caught.value) == message


def test_the_preset_tables_are_registries_with_their_public_names():
    assert posenc.CONVENTIONS == conventions._PRESETS.names() == tuple(p.name for p in posenc.list_conventions())
    assert posenc.CONVENTIONS[:3] == ("paper", "hf-xlm", "hf-marian") and len(posenc.CONVENTIONS) == 11
    assert tuple(posenc.list_grid_conventions()) == grid._PRESETS.names()
    assert posenc.ROPE_TYPES == rotary._RULES.names()
    assert posenc.ROPE_TYPES == ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional")
    assert posenc.rope.AXIAL_CONVENTIONS == axial._AXIAL.names() == ("pixtral", "qwen2_vl")
    assert isinstance(configs.FAMILIES, Registry) and configs.FAMILIES["gptj"] == ("interleaved", "pairs", None)
