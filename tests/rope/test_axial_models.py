"""M-RoPE position ids (posenc.rope.axial.mrope_position_ids) against the installed transformers'
own ``get_rope_index`` of Qwen2-VL, Qwen2.5-VL and Qwen3-VL, with tiny random models, offline;
and the 4.x rule (text resumes one past the largest id) against the example in its docstring.
Notebook 10 shows these sequences."""

import numpy as np
import pytest

from posenc.rope import axial as rg

try:
    import torch
    import transformers
except ImportError:  # the tests on the models skip one by one (the models fixture); the rule's own tests run
    torch = transformers = None

TEXT = {"hidden_size": 32, "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 1,
        "intermediate_size": 32, "vocab_size": 16}
VISION = {"depth": 1, "num_heads": 2, "hidden_size": 32}


@pytest.fixture(scope="module")
def models():
    pytest.importorskip("torch", reason="the conventions extra needs torch")
    pytest.importorskip("transformers", minversion="5.0", reason="install the conventions extra: pip install -e '.[conventions]'")
    torch.manual_seed(0)
    return {
        "qwen2_vl": transformers.Qwen2VLModel(transformers.Qwen2VLConfig(
            text_config=TEXT, vision_config={**VISION, "embed_dim": 16})),
        "qwen2_5_vl": transformers.Qwen2_5_VLModel(transformers.Qwen2_5_VLConfig(
            text_config=TEXT, vision_config={**VISION, "intermediate_size": 32, "out_hidden_size": 32})),
        "qwen3_vl": transformers.Qwen3VLModel(transformers.Qwen3VLConfig(
            text_config={**TEXT, "head_dim": 16, "rope_parameters": {"rope_type": "default", "mrope_section": [2, 3, 3]}},
            vision_config={**VISION, "intermediate_size": 32, "out_hidden_size": 32, "deepstack_visual_indexes": []})),
    }


def token_types(segments, video_blocks):
    """mm_token_type_ids: 0 text, 1 image, 2 video; the vision blocks whose index is in ``video_blocks`` are video."""
    kinds, block = [], 0
    for s in segments:
        if isinstance(s, int):
            kinds += [0] * s
        else:
            kinds += [2 if block in video_blocks else 1] * (s[0] * s[1] * s[2] // 4)
            block += 1
    return torch.tensor([kinds])


def their_rows(model, kinds, images, videos, **extra):
    theirs, _ = model.get_rope_index(
        torch.zeros_like(kinds), kinds,
        image_grid_thw=torch.tensor(images) if images else None,
        video_grid_thw=torch.tensor(videos) if videos else None,
        **extra,
    )
    return theirs[:, 0].numpy()


# Notebook 10's sequence: text, an image of 4 x 6 patches, text, a video of 3 temporal patches of 4 x 4, text.
NOTEBOOK = [4, (1, 4, 6), 3, (3, 4, 4), 3]


def test_qwen2_vl_get_rope_index_resumes_at_the_longer_side(models):
    theirs = their_rows(models["qwen2_vl"], token_types(NOTEBOOK, {1}), [NOTEBOOK[1]], [NOTEBOOK[3]])
    np.testing.assert_array_equal(rg.mrope_position_ids(NOTEBOOK), theirs)
    # and not one past the largest id, the 4.x rule: the video's last frame is at 12, the text after it too.
    assert theirs[0, 25] == 12 and rg.mrope_position_ids(NOTEBOOK, text_resumes="after_largest")[0, 25] == 13


@pytest.mark.parametrize("second_per_grid", [1.0, 0.5, 2 / 3])
def test_qwen2_5_vl_spaces_the_frames_by_tokens_per_second(models, second_per_grid):
    model = models["qwen2_5_vl"]
    per_second = model.config.vision_config.tokens_per_second
    segments = [2, (1, 2, 4), 3, (4, 2, 2), 2]
    theirs = their_rows(model, token_types(segments, {1}), [segments[1]], [segments[3]],
                        second_per_grid_ts=torch.tensor([second_per_grid]))
    ours = rg.mrope_position_ids(segments, time_interval=per_second * second_per_grid)
    np.testing.assert_array_equal(ours, theirs)
    # an image is never spaced: its time row is its start
    assert (ours[0, 2:4] == 2).all()


def test_qwen3_vl_takes_a_video_frame_by_frame_between_timestamps(models):
    # <0.5 seconds> <vision_start> frame <vision_end> ...: the timestamps and the two markers are text tokens.
    stamp = 5
    segments = [3, stamp, (1, 4, 4), stamp, (1, 4, 4), stamp, (1, 4, 4), 2]
    frames = {0, 1, 2}
    theirs = their_rows(models["qwen3_vl"], token_types(segments, frames), None, [(3, 4, 4)])
    ours = rg.mrope_position_ids(segments)
    np.testing.assert_array_equal(ours, theirs)
    # frame by frame, both rules agree
    np.testing.assert_array_equal(ours, rg.mrope_position_ids(segments, text_resumes="after_largest"))


def test_after_largest_is_the_4x_docstring_example():
    # transformers 4.x Qwen2VLModel.get_rope_index: "a video input with 3 temporal patches, 2 height patches and
    # 2 width patches" (merged), then 5 text tokens: text position ids 3, 4, 5, 6, 7.
    rows = rg.mrope_position_ids([(3, 2, 2), 5], spatial_merge_size=1, text_resumes="after_largest")
    np.testing.assert_array_equal(rows[:, :12], [[0] * 4 + [1] * 4 + [2] * 4, [0, 0, 1, 1] * 3, [0, 1, 0, 1] * 3])
    np.testing.assert_array_equal(rows[:, 12:], [[3, 4, 5, 6, 7]] * 3)
    # 5.x: the text starts at the longer side, 2, inside the video's times
    assert rg.mrope_position_ids([(3, 2, 2), 5], spatial_merge_size=1)[0, 12] == 2


def test_the_two_rules_agree_on_images_and_short_videos():
    for segments in ([4, (1, 4, 6), 3], [2, (2, 4, 6), 1], [(1, 8, 2), (1, 2, 2), 1]):
        np.testing.assert_array_equal(rg.mrope_position_ids(segments), rg.mrope_position_ids(segments, text_resumes="after_largest"))


def test_frames_at_one_time_and_empty_text_are_taken():
    # time_interval 0: every frame of a video at its first time (allowed, as >= 0 says); a text of
    # no tokens adds no column.
    rows = rg.mrope_position_ids([2, (3, 2, 2), 0, 1], spatial_merge_size=1, time_interval=0)
    np.testing.assert_array_equal(rows[0], [0, 1] + [2] * 12 + [4])
    np.testing.assert_array_equal(rows, rg.mrope_position_ids([2, (3, 2, 2), 1], spatial_merge_size=1, time_interval=0))


def test_bad_rule_and_interval_name_the_argument():
    with pytest.raises(ValueError, match="text_resumes"):
        rg.mrope_position_ids([1], text_resumes="longest")
    with pytest.raises(ValueError, match="time_interval"):
        rg.mrope_position_ids([1], time_interval=-1)


def test_notebook_10_exercise_rows_are_posenc_rows():
    from posenc.exercises import nb10

    np.testing.assert_array_equal(nb10.mrope_rows_solution(), rg.mrope_position_ids([2, (1, 4, 6), 2]))
