"""The presets against the real packages they name (the `conventions` extra, pinned in constraints.txt).

Each test skips, saying which package is missing, when the extra is not installed
(`pip install -e ".[conventions]"`). keras-hub is not tested here: it drags in the full
`tensorflow` wheel next to tensorflow-cpu (see pyproject.toml); tests/sinusoidal/test_conventions.py
checks its formula. Sources that compute in float32 are off from the exact formula by up to
about 1e-7 per unit of position (float32 frequencies and angles), hence their tolerance.
"""

import numpy as np
import pytest

import posenc

# Every test here compares with the packages below, hence one skip for the file.
torch = pytest.importorskip("torch", reason="the conventions extra needs torch")
transformers = pytest.importorskip("transformers", reason="install the conventions extra: pip install -e '.[conventions]'")
diffusers = pytest.importorskip("diffusers", reason="install the conventions extra: pip install -e '.[conventions]'")

SHAPES = [(10, 6), (64, 7), (300, 64), (1500, 384), (512, 513)]


def float32_source(length):
    """What a float32 computation of ``sin(p * w)`` may be off by, up to position ``length``."""
    return 1e-6 + 2e-7 * length


@pytest.mark.parametrize(("length", "d_model"), SHAPES)
def test_xlm_and_distilbert(length, d_model):
    from transformers.models.distilbert.modeling_distilbert import create_sinusoidal_embeddings as distilbert
    from transformers.models.xlm.modeling_xlm import create_sinusoidal_embeddings as xlm

    ours = posenc.positional_encoding(length, d_model, convention="hf-xlm")
    for create in (xlm, distilbert):
        out = torch.empty(length, d_model)
        create(length, d_model, out)
        # float64 then cast: one float32 rounding apart.
        np.testing.assert_allclose(out.numpy(), ours, rtol=0, atol=3e-7)


@pytest.mark.parametrize(("length", "d_model"), SHAPES)
def test_marian(length, d_model):
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding

    weight = MarianSinusoidalPositionalEmbedding(length, d_model).create_weight()
    ours = posenc.positional_encoding(length, d_model, convention="hf-marian")
    np.testing.assert_allclose(weight.numpy(), ours, rtol=0, atol=3e-7)


@pytest.mark.parametrize(("length", "d_model"), [s for s in SHAPES if s[1] % 2 == 0])
def test_whisper_as_ported_to_transformers(length, d_model):
    from transformers.models.whisper.modeling_whisper import sinusoids

    ours = posenc.positional_encoding(length, d_model, convention="whisper")
    np.testing.assert_allclose(sinusoids(length, d_model).numpy(), ours, rtol=0, atol=float32_source(length))
    with pytest.raises(ValueError):
        sinusoids(length, d_model + 1)  # and posenc refuses it too:
    with pytest.raises(ValueError, match="even d_model"):
        posenc.positional_encoding(length, d_model + 1, convention="whisper")


@pytest.mark.parametrize(("length", "d_model"), SHAPES)
@pytest.mark.parametrize("padding_idx", [1, 0, None])
def test_fairseq_as_ported_to_speech_to_text(length, d_model, padding_idx):
    # Speech2TextSinusoidalPositionalEmbedding.get_embedding is fairseq's get_embedding.
    from transformers.models.speech_to_text.modeling_speech_to_text import (
        Speech2TextSinusoidalPositionalEmbedding as Embedding,
    )

    weights = Embedding.get_embedding(length, d_model, padding_idx).numpy()
    ours = posenc.positional_encoding(length, d_model, convention="fairseq", padding_idx=padding_idx)
    np.testing.assert_allclose(weights, ours, rtol=0, atol=float32_source(length))
    if padding_idx is not None:
        assert not ours[padding_idx].any()


@pytest.mark.parametrize("d_model", [6, 7, 64, 320, 321])
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"flip_sin_to_cos": True, "downscale_freq_shift": 0},  # Stable Diffusion's UNet
        {"flip_sin_to_cos": False, "downscale_freq_shift": 0.5, "scale": 2.0, "max_period": 1000},
    ],
    ids=["defaults", "stable-diffusion", "scaled"],
)
def test_diffusers_timestep_embedding(d_model, options):
    from diffusers.models.embeddings import get_timestep_embedding

    timesteps = np.array([0, 1, 2.5, 10, 999, 500.25])
    theirs = get_timestep_embedding(torch.from_numpy(timesteps), d_model, **options).numpy()
    ours = posenc.encode(timesteps, d_model, convention="diffusers", **options)
    reach = 1000 * options.get("scale", 1)
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=float32_source(reach))
    if "scale" not in options:  # identify reads base, shift, layout and offset, not a scale
        # Stable Diffusion's is named "diffusers" (shift 0): the paper's numbers in cos_sin order.
        table = get_timestep_embedding(torch.arange(200), d_model, **options)
        found = posenc.identify(table).convention
        rebuilt = posenc.positional_encoding(200, d_model, convention=found)
        np.testing.assert_allclose(rebuilt, table.numpy(), rtol=0, atol=float32_source(200))


def test_tables_from_the_packages_are_identified():
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding
    from transformers.models.speech_to_text.modeling_speech_to_text import (
        Speech2TextSinusoidalPositionalEmbedding as Embedding,
    )
    from transformers.models.whisper.modeling_whisper import sinusoids

    assert "hf-marian" in posenc.identify(MarianSinusoidalPositionalEmbedding(512, 512).create_weight()).matches
    assert posenc.identify(Embedding.get_embedding(1024, 256, 1)).name == "fairseq"
    assert "whisper" in posenc.identify(sinusoids(1500, 384)).matches
