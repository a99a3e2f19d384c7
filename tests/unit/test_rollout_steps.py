"""Step boundaries for step-level estimators, derived from completion text and token offsets."""

from __future__ import annotations

from botgrpo_cli.trainer.rollouts import step_ends


def test_separator_ends_on_token_holding_its_last_char():
    text = "2+2=4\n\n4*3=12\n\n\\boxed{12}"
    # tokens: "2+2=4" "\n" "\n4" "*3=12\n\n" "\\boxed{12}" EOS
    offsets = [(0, 5), (5, 6), (6, 8), (8, 15), (15, 25), (25, 25)]
    ends = step_ends([text], [offsets], "\n\n", T=8)
    assert ends[0].tolist() == [False, False, True, True, False, True, False, False]


def test_no_separator_means_one_step_ending_at_last_token():
    ends = step_ends(["abc", ""], [[(0, 1), (1, 3)], []], None, T=3)
    assert ends.tolist() == [[False, True, False], [False, False, False]]


def test_tokens_without_characters_never_end_a_step_early():
    text = "a\n\nb"
    offsets = [(0, 1), (1, 1), (1, 3), (3, 4)]  # token 1 holds an incomplete character
    assert step_ends([text], [offsets], "\n\n", T=4)[0].tolist() == [False, False, True, True]
