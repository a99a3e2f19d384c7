"""The similarity judge's pure parts (SSIM, colour, text, layout), the blank-page rescaling and the
weighted sum, on synthetic images; the real-render checks are in tests/integration/test_render_chromium.py."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from botgrpo_rewards.render.similarity import (
    SIGMA,
    WEIGHTS,
    aligned_ssim,
    background,
    colour_similarity,
    gray_small,
    ink_crop,
    ink_mask,
    layout_similarity,
    rescale,
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


def test_aligned_ssim_matches_moved_content_that_plain_ssim_misses():
    ref = gray_small(_page(), factor=1)
    moved = np.roll(ref, 5, axis=0)  # everything 5 rows lower (the wrapped rows are background)
    assert aligned_ssim(ref, ref) == 1.0
    assert aligned_ssim(moved, ref, max_shift=0) == pytest.approx(ssim(moved, ref), rel=1e-12)
    assert ssim(moved, ref) < 0.6 and aligned_ssim(moved, ref, max_shift=6) > 0.95


def test_background_ink_and_crop():
    img = _page()
    assert background(img).tolist() == [255, 255, 255]
    ink = ink_mask(img, background(img))
    assert ink.sum() == 12 * 32 + 12 * 36
    rows, cols = ink_crop([ink], margin=2, min_side=4)
    assert (rows.start, rows.stop, cols.start, cols.stop) == (6, 42, 6, 58)
    small = np.zeros((48, 64), bool)
    small[20, 30] = True  # one pixel: the crop grows to the minimum side, inside the image
    rows, cols = ink_crop([small], margin=0, min_side=10)
    assert rows.stop - rows.start == 10 and cols.stop - cols.start == 10 and rows.start <= 20 < rows.stop
    assert ink_crop([np.zeros((4, 5), bool)]) == (slice(0, 4), slice(0, 5))  # no ink: everything


def test_colour_similarity_counts_shared_colours():
    black, red = np.zeros((100, 3), np.uint8), np.tile(np.array([[200, 0, 0]], np.uint8), (100, 1))
    assert colour_similarity(black, black) == 1.0
    assert colour_similarity(black[:50], black) == pytest.approx(0.5)  # half the ink is missing
    assert colour_similarity(np.concatenate([black[:50], red[:50]]), black) == pytest.approx(0.5)
    assert colour_similarity(red, black) == 0.0
    assert colour_similarity(black[:0], black[:0]) == 1.0


def test_text_similarity_is_word_f1():
    assert text_similarity("", "") == 1.0
    assert text_similarity("Add item", "add ITEM") == 1.0
    assert text_similarity("a b c d", "a b") == pytest.approx(2 * 2 / 6)
    assert text_similarity("x", "") == 0.0


def test_layout_similarity_matches_boxes_by_size_and_distance_both_ways():
    box = [0, 0, 10, 10]
    assert layout_similarity([box], [box]) == 1.0
    assert layout_similarity([], []) == 1.0 and layout_similarity([box], []) == 0.0
    near = np.exp(-25 / (2 * SIGMA**2))  # centres 5 px apart
    assert layout_similarity([box], [[5, 0, 10, 10]]) == pytest.approx(near)
    assert layout_similarity([box], [[0, 0, 20, 10]]) == pytest.approx(0.5 * near)  # half as wide
    assert layout_similarity([box], [[200, 0, 10, 10]]) < 1e-6
    # one extra far box in b only lowers the b->a direction
    assert layout_similarity([box], [box, [300, 300, 10, 10]]) == pytest.approx(0.5 * (1 + 0.5))


def test_rescale_maps_the_blank_value_to_zero():
    assert rescale(0.9, 0.8) == pytest.approx(0.5)
    assert rescale(1.0, 0.8) == 1.0 and rescale(0.7, 0.8) == 0.0
    assert rescale(1.0, 1.0) is None  # the part cannot tell a blank page from the reference


def test_similarity_identical_is_one_and_different_lower():
    a, b = _png(_page(0)), _png(_page(5))
    boxes = [[8, 8, 32, 12], [20, 28, 36, 12]]
    same = similarity(a, "Hello world", boxes, a, "Hello world", boxes)
    assert same["score"] == 1.0 and all(same[k] == 1.0 for k in WEIGHTS)
    other = similarity(b, "Goodbye", [[0, 0, 64, 48]], a, "Hello world", boxes)
    assert 0.0 <= other["score"] < same["score"]
    assert other["score"] == pytest.approx(sum(WEIGHTS[k] * other[k] for k in WEIGHTS), abs=1e-6)


def test_similarity_of_a_blank_page_is_zero():
    blank = _png(np.full((48, 64, 3), 255, np.uint8))
    boxes = [[8, 8, 32, 12], [20, 28, 36, 12]]
    got = similarity(blank, "", [], _png(_page()), "Hello world", boxes)
    assert got["score"] == 0.0 and all(got[k] == 0.0 for k in WEIGHTS)


def test_a_part_the_reference_cannot_inform_is_left_out():
    """A reference without text: the text part says nothing, so the candidate's text does not count."""
    ref, boxes = _png(_page()), [[8, 8, 32, 12], [20, 28, 36, 12]]
    silent = similarity(ref, "", boxes, ref, "", boxes)
    chatty = similarity(ref, "some words", boxes, ref, "", boxes)
    assert silent["score"] == chatty["score"] == 1.0 and chatty["text"] == 0.0


def test_similarity_rejects_different_sizes():
    with pytest.raises(ValueError, match="differ in size"):
        similarity(_png(_page()), "", [], _png(np.zeros((10, 10, 3))), "", [])
