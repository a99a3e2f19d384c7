"""The offline `similarity` judge: how much a candidate render looks like the reference's.

Screenshots are mostly page background, so raw image scores are high for any pair (plain SSIM and
colour histograms of a blank page against a typical reference: ~0.94 and ~0.99). So pixels are
compared only around the ink, and every part is rescaled against a blank page:

    part' = max(0, (part - part_blank) / (1 - part_blank))
    score = sum(WEIGHTS[p] * part'_p for informative p) / sum(WEIGHTS[p] for informative p)

`part_blank` is the part's value for a blank candidate (the reference's background colour, no text,
no boxes) against the same reference; a part is informative when part_blank < 1 (the text part is
not when the reference shows no text). No informative part (a blank reference): the plain
weighted mean of the raw parts. WEIGHTS: ssim 0.3, colour 0.15, text 0.3, layout 0.25. Raw parts:
- ssim: structural similarity (Wang et al. 2004; 7x7 uniform window, K1=0.01, K2=0.03) of the
  grayscale screenshots downscaled 4x by box average, cropped to the bounding box of both renders'
  ink (pixels more than INK_TOL off their image's most common colour) plus MARGIN. Shift-tolerant:
  the windows are grouped in bands of BAND rows and each band takes its best mean SSIM over
  vertical shifts of the candidate up to MAX_SHIFT rows (48 px), so content that moved because an
  element above it changed still matches. Negative values count as 0.
- colour: sum(min(ha, hb)) / max(|a|, |b|) of 8x8x8-bin RGB histograms of the two renders' ink
  pixels (counts, so missing ink costs too); 1 when neither has ink.
- text: F1 of the two multisets of lower-cased words in the rendered page text.
- layout: each element box (from the DOM) takes its best match in the other render, where a match
  is width ratio * height ratio * exp(-d^2 / 2 SIGMA^2), d the distance of the centres (SIGMA =
  32 px); averaged over the boxes, then over both directions.
Identical renders score exactly 1, a blank candidate 0. All functions are pure and deterministic.
"""

from __future__ import annotations

import io
import re
from collections import Counter

import numpy as np
from PIL import Image

WEIGHTS = {"ssim": 0.3, "colour": 0.15, "text": 0.3, "layout": 0.25}
DOWNSCALE = 4
MAX_SHIFT = 12  # rows of the downscaled image (48 px): how far content may move and still match
BAND = 8  # rows of SSIM windows (32 px) that share one shift
WINDOW = 7
MAX_BOXES = 500
SIGMA = 32.0  # px: a box whose centre moved this far still matches exp(-1/2) = 0.61
INK_TOL = 8  # a channel this far from the background colour is ink (JPEG-free PNGs: no noise)
MARGIN = 8  # pixels around the ink crop, so the SSIM window sees the ink's edges
MIN_CROP = DOWNSCALE * (WINDOW + 1)  # smallest crop side that still fits one SSIM window


def decode_png(png: bytes) -> np.ndarray:
    """RGB pixels, uint8, shape (H, W, 3)."""
    with Image.open(io.BytesIO(png)) as img:
        return np.asarray(img.convert("RGB"))


def is_blank(png: bytes) -> bool:
    """True when every pixel of the screenshot has the same colour."""
    rgb = decode_png(png).reshape(-1, 3)
    return bool((rgb == rgb[0]).all())


def background(rgb: np.ndarray) -> np.ndarray:
    """The most common colour of an (H, W, 3) image (every 4th pixel each way), shape (3,)."""
    packed = (rgb[::4, ::4].reshape(-1, 3).astype(np.int64) * np.array([65536, 256, 1])).sum(axis=1)
    values, counts = np.unique(packed, return_counts=True)
    top = int(values[np.argmax(counts)])
    return np.array([top >> 16, (top >> 8) & 255, top & 255], dtype=np.uint8)


def ink_mask(rgb: np.ndarray, bg: np.ndarray, tol: int = INK_TOL) -> np.ndarray:
    """(H, W) bool: pixels with a channel more than `tol` away from the background colour."""
    d = np.maximum(rgb, bg) - np.minimum(rgb, bg)  # |rgb - bg| without uint8 wrap-around
    return (d[..., 0] > tol) | (d[..., 1] > tol) | (d[..., 2] > tol)


def ink_crop(masks: list[np.ndarray], margin: int = MARGIN, min_side: int = MIN_CROP) -> tuple[slice, slice]:
    """Rows and columns of the bounding box of all masks' ink, grown by `margin` and to at least
    `min_side` (within the image). No ink at all: the whole image."""
    h, w = masks[0].shape
    ink = np.logical_or.reduce(masks)
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if rows.size == 0:
        return slice(0, h), slice(0, w)
    return (_span(rows[0], rows[-1] + 1, margin, min_side, h), _span(cols[0], cols[-1] + 1, margin, min_side, w))


def _span(lo: int, hi: int, margin: int, min_side: int, size: int) -> slice:
    lo, hi = max(0, lo - margin), min(size, hi + margin)
    short = min(min_side, size) - (hi - lo)
    if short > 0:  # grow both ways, then push back inside the image
        lo = max(0, lo - (short + 1) // 2)
        hi = min(size, lo + min(min_side, size))
        lo = hi - max(hi - lo, min(min_side, size))
    return slice(int(lo), int(hi))


def gray_small(rgb: np.ndarray, factor: int = DOWNSCALE) -> np.ndarray:
    """Luma (BT.601) averaged over factor x factor blocks. (H, W, 3) -> (H//f, W//f) float64."""
    g = rgb.astype(np.float64) @ np.array([0.299, 0.587, 0.114])  # (H, W)
    h, w = (g.shape[0] // factor) * factor, (g.shape[1] // factor) * factor
    return g[:h, :w].reshape(h // factor, factor, w // factor, factor).mean(axis=(1, 3))


def _box_mean(x: np.ndarray, k: int) -> np.ndarray:
    """Mean over every k x k window fully inside x (valid convolution). (H, W) -> (H-k+1, W-k+1)."""
    c = np.zeros((x.shape[0] + 1, x.shape[1] + 1))
    np.cumsum(x, axis=0, out=c[1:, 1:])
    np.cumsum(c[1:, 1:], axis=1, out=c[1:, 1:])
    return (c[k:, k:] - c[:-k, k:] - c[k:, :-k] + c[:-k, :-k]) / (k * k)


def ssim(a: np.ndarray, b: np.ndarray, k: int = WINDOW, data_range: float = 255.0) -> float:
    """Mean SSIM of two same-shape grayscale images; 1.0 exactly when a == b."""
    if a.shape != b.shape:
        raise ValueError(f"ssim needs equal shapes, got {a.shape} and {b.shape}")
    return float(np.mean(ssim_map(a, b, k, data_range)))


def _shifted(x: np.ndarray, dy: int) -> np.ndarray:
    """x moved down by dy rows (up when negative); vacated rows repeat the edge row (background,
    as the crop has a margin around the ink)."""
    return x if dy == 0 else x[np.clip(np.arange(x.shape[0]) - dy, 0, x.shape[0] - 1)]


def _moments(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Window means and variances of x."""
    mu = _box_mean(x, k)
    return mu, _box_mean(x * x, k) - mu * mu


def ssim_map(a: np.ndarray, b: np.ndarray, k: int = WINDOW, data_range: float = 255.0,
             b_moments: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """SSIM of every k x k window of two same-shape grayscale images, (H-k+1, W-k+1).
    `b_moments`: b's `_moments`, when already known."""
    if min(a.shape) < k:
        raise ValueError(f"ssim needs images of at least {k}x{k} pixels, got {a.shape}")
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    (mu_a, var_a), (mu_b, var_b) = _moments(a, k), b_moments or _moments(b, k)
    cov = _box_mean(a * b, k) - mu_a * mu_b
    num = (2 * mu_a * mu_b + c1) * (2 * cov + c2)
    den = (mu_a * mu_a + mu_b * mu_b + c1) * (var_a + var_b + c2)
    return np.minimum(1.0, num / den)  # SSIM <= 1: the cap only drops float noise of the running sums


def aligned_ssim(cand: np.ndarray, ref: np.ndarray, max_shift: int = MAX_SHIFT, band: int = BAND) -> float:
    """Mean over horizontal bands (`band` rows of windows) of the best band SSIM over vertical
    shifts of `cand` within +-max_shift rows: content that moved up or down (an element added or
    removed above it) still matches. Equals `ssim` (to rounding) when max_shift is 0."""
    if cand.shape != ref.shape:
        raise ValueError(f"ssim needs equal shapes, got {cand.shape} and {ref.shape}")
    rows = cand.shape[0] - WINDOW + 1
    starts = np.arange(0, rows, band)
    sizes = np.diff(np.append(starts, rows))
    ref_moments = _moments(ref, WINDOW)
    best = np.full(len(starts), -np.inf)
    limit = min(max_shift, cand.shape[0] - 1)
    for dy in range(-limit, limit + 1):
        per_row = ssim_map(_shifted(cand, dy), ref, b_moments=ref_moments).sum(axis=1)  # (rows,)
        best = np.maximum(best, np.add.reduceat(per_row, starts) / sizes)
    return float(np.dot(best, sizes) / (rows * (cand.shape[1] - WINDOW + 1)))


def _hist(rgb: np.ndarray, bins: int) -> np.ndarray:
    """Pixel counts of an (N, 3) colour list in bins**3 RGB bins."""
    q = (rgb.astype(np.int64) * bins) // 256
    return np.bincount((q[:, 0] * bins + q[:, 1]) * bins + q[:, 2], minlength=bins**3)


def colour_similarity(a: np.ndarray, b: np.ndarray, bins: int = 8) -> float:
    """Shared colours of two (N, 3) pixel lists: histogram intersection over the larger count."""
    if len(a) == 0 and len(b) == 0:
        return 1.0
    return float(np.minimum(_hist(a, bins), _hist(b, bins)).sum() / max(len(a), len(b)))


def text_similarity(a: str, b: str) -> float:
    """F1 of word multisets (lower-cased \\w+ tokens); two empty texts are identical."""
    wa, wb = Counter(re.findall(r"\w+", a.lower())), Counter(re.findall(r"\w+", b.lower()))
    total = sum(wa.values()) + sum(wb.values())
    return 1.0 if total == 0 else 2.0 * sum((wa & wb).values()) / total


def _best_match(src: np.ndarray, dst: np.ndarray, sigma: float) -> np.ndarray:
    """For each box of src (N, 4 as x, y, w, h), the best match with a box of dst (M, 4): the
    product of the width ratio, the height ratio and exp(-d^2 / 2 sigma^2), d the centres' distance."""
    w = np.maximum(src[:, None, 2:4], 1e-9), np.maximum(dst[None, :, 2:4], 1e-9)
    size = (np.minimum(*w) / np.maximum(*w)).prod(axis=2)  # (N, M)
    d = (src[:, None, :2] + src[:, None, 2:4] / 2) - (dst[None, :, :2] + dst[None, :, 2:4] / 2)
    return (size * np.exp(-(d * d).sum(axis=2) / (2 * sigma * sigma))).max(axis=1)


def layout_similarity(a: list, b: list, max_boxes: int = MAX_BOXES, sigma: float = SIGMA) -> float:
    """Symmetric mean best match (see _best_match) of two lists of [x, y, w, h] element boxes."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    ba = np.asarray(a[:max_boxes], dtype=np.float64)
    bb = np.asarray(b[:max_boxes], dtype=np.float64)
    return float(0.5 * (_best_match(ba, bb, sigma).mean() + _best_match(bb, ba, sigma).mean()))


def rescale(part: float, blank: float) -> float | None:
    """`part` on a scale where a blank candidate's value is 0 and identity 1; None when the blank
    value is already 1 (the part cannot tell a blank page from the reference)."""
    if blank > 1.0 - 1e-9:
        return None
    return min(1.0, max(0.0, (part - blank) / (1.0 - blank)))


def pixel_parts(cand: np.ndarray, ref: np.ndarray) -> tuple[dict[str, float], dict[str, float]]:
    """Raw (ssim, colour) of the candidate and of a blank page (the reference's background)."""
    bg_c, bg_r = background(cand), background(ref)
    ink_c, ink_r = ink_mask(cand, bg_c), ink_mask(ref, bg_r)
    rows, cols = ink_crop([ink_c, ink_r])
    gray_c, gray_r = gray_small(cand[rows, cols]), gray_small(ref[rows, cols])
    blank = np.broadcast_to(bg_r, ref[rows, cols].shape)
    raw = {"ssim": max(0.0, aligned_ssim(gray_c, gray_r)),
           "colour": colour_similarity(cand[ink_c], ref[ink_r])}
    empty = np.zeros((0, 3), np.uint8)
    # max_shift=0: a uniform page is the same at every shift; the same code path keeps a blank
    # candidate's value equal to the baseline to the last bit, so it rescales to exactly 0
    base = {"ssim": max(0.0, aligned_ssim(gray_small(blank), gray_r, max_shift=0)),
            "colour": colour_similarity(empty, ref[ink_r])}
    return raw, base


def similarity(cand_png: bytes, cand_text: str, cand_boxes: list,
               ref_png: bytes, ref_text: str, ref_boxes: list) -> dict[str, float]:
    """The rescaled parts and the weighted `score`, all in [0, 1] (a part that cannot tell a blank
    page from the reference is reported raw and left out of the score)."""
    ca, ra = decode_png(cand_png), decode_png(ref_png)
    if ca.shape != ra.shape:  # same renderer and viewport, so only a misconfiguration gets here
        raise ValueError(f"screenshots differ in size: {ca.shape} vs {ra.shape}")
    raw, base = pixel_parts(ca, ra)
    raw.update(text=text_similarity(cand_text, ref_text), layout=layout_similarity(cand_boxes, ref_boxes))
    base.update(text=text_similarity("", ref_text), layout=layout_similarity([], ref_boxes))
    scaled = {k: rescale(raw[k], base[k]) for k in WEIGHTS}
    used = {k: v for k, v in scaled.items() if v is not None}
    if used:
        score = sum(WEIGHTS[k] * v for k, v in used.items()) / sum(WEIGHTS[k] for k in used)
    else:
        score = sum(WEIGHTS[k] * raw[k] for k in WEIGHTS)
    parts = {k: raw[k] if v is None else v for k, v in scaled.items()}
    return {**parts, "score": min(1.0, max(0.0, round(score, 6)))}
