"""The similarity judge's pure parts: SSIM, colour, text, layout and their weighted sum."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from botgrpo_rewards.render.similarity import (
    WEIGHTS,
    colour_similarity,
    gray_small,
    layout_similarity,
    similarity,
    ssim,
    text_similarity,
)


def _png(rgb: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(rgb.astype(np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def _page(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = np.full((48, 64, 3), 255, np.uint8)
    img[8:20, 8:40] = rng.integers(0, 255, 3)
    img[28:40, 20:56] = rng.integers(0, 255, 3)
    return img


def test_weights_sum_to_one():
    assert sum(WEIGHTS.values()) == pytest.approx(1.0)


def test_ssim_identity_is_exactly_one_and_noise_lowers_it():
    a = gray_small(_page(), factor=1)
    assert ssim(a, a) == 1.0
    noisy = a + np.random.default_rng(1).normal(0, 40, a.shape)
    assert ssim(a, noisy) < 0.5


def test_ssim_matches_a_plain_loop_reference():
    rng = np.random.default_rng(2)
    a, b = rng.uniform(0, 255, (12, 10)), rng.uniform(0, 255, (12, 10))
    c1, c2, k, vals = (0.01 * 255) ** 2, (0.03 * 255) ** 2, 7, []
    for i in range(12 - k + 1):
        for j in range(10 - k + 1):
            x, y = a[i:i + k, j:j + k], b[i:i + k, j:j + k]
            mx, my = x.mean(), y.mean()
            vx, vy, cov = x.var(), y.var(), ((x - mx) * (y - my)).mean()
            vals.append((2 * mx * my + c1) * (2 * cov + c2) / ((mx**2 + my**2 + c1) * (vx + vy + c2)))
    assert ssim(a, b) == pytest.approx(np.mean(vals), rel=1e-9)


def test_gray_small_averages_blocks():
    img = np.zeros((4, 4, 3), np.uint8)
    img[:2, :2] = 255
    assert gray_small(img, factor=2) == pytest.approx(np.array([[255.0, 0.0], [0.0, 0.0]]))


def test_colour_similarity_counts_shared_proportions():
    white = np.full((10, 10, 3), 255, np.uint8)
    half = white.copy()
    half[:5] = 0
    assert colour_similarity(white, white) == 1.0
    assert colour_similarity(white, half) == pytest.approx(0.5)


def test_text_similarity_is_word_f1():
    assert text_similarity("", "") == 1.0
    assert text_similarity("Add item", "add ITEM") == 1.0
    assert text_similarity("a b c d", "a b") == pytest.approx(2 * 2 / 6)
    assert text_similarity("x", "") == 0.0


def test_layout_similarity_uses_best_iou_both_ways():
    box = [0, 0, 10, 10]
    assert layout_similarity([box], [box]) == 1.0
    assert layout_similarity([], []) == 1.0 and layout_similarity([box], []) == 0.0
    shifted = [5, 0, 10, 10]  # overlap 50, union 150
    assert layout_similarity([box], [shifted]) == pytest.approx(1 / 3)
    # one extra box in b only lowers the b->a direction
    assert layout_similarity([box], [box, [100, 100, 5, 5]]) == pytest.approx(0.5 * (1 + 0.5))


def test_similarity_identical_is_one_and_different_lower():
    a, b = _png(_page(0)), _png(_page(5))
    boxes = [[8, 8, 32, 12], [20, 28, 36, 12]]
    same = similarity(a, "Hello world", boxes, a, "Hello world", boxes)
    assert same["score"] == 1.0 and all(same[k] == 1.0 for k in WEIGHTS)
    other = similarity(b, "Goodbye", [[0, 0, 64, 48]], a, "Hello world", boxes)
    assert 0.0 <= other["score"] < same["score"]
    assert other["score"] == pytest.approx(sum(WEIGHTS[k] * other[k] for k in WEIGHTS), abs=1e-6)


def test_similarity_rejects_different_sizes():
    with pytest.raises(ValueError, match="differ in size"):
        similarity(_png(_page()), "", [], _png(np.zeros((10, 10, 3))), "", [])
