"""The offline `similarity` judge: how much a candidate screenshot looks like the reference's.

score = 0.4 * SSIM + 0.2 * colour + 0.2 * text + 0.2 * layout, each part in [0, 1]:
- SSIM: mean structural similarity (Wang et al. 2004; 7x7 uniform window, K1=0.01, K2=0.03) of the
  grayscale screenshots downscaled 4x by box average; negative values count as 0.
- colour: intersection of the two 8x8x8-bin RGB histograms (1 = same colour proportions).
- text: F1 of the two multisets of lower-cased words in the rendered page text.
- layout: for each element box (from the DOM) the best IoU with a box of the other render, averaged
  over both renders' boxes, then over the two directions.
Identical screenshots and DOMs score exactly 1. All functions are pure and deterministic.
"""

from __future__ import annotations

import io
import re
from collections import Counter

import numpy as np
from PIL import Image

WEIGHTS = {"ssim": 0.4, "colour": 0.2, "text": 0.2, "layout": 0.2}
DOWNSCALE = 4
WINDOW = 7
MAX_BOXES = 500


def decode_png(png: bytes) -> np.ndarray:
    """RGB pixels, uint8, shape (H, W, 3)."""
    with Image.open(io.BytesIO(png)) as img:
        return np.asarray(img.convert("RGB"))


def is_blank(png: bytes) -> bool:
    """True when every pixel of the screenshot has the same colour."""
    rgb = decode_png(png).reshape(-1, 3)
    return bool((rgb == rgb[0]).all())


def gray_small(rgb: np.ndarray, factor: int = DOWNSCALE) -> np.ndarray:
    """Luma (BT.601) averaged over factor x factor blocks. (H, W, 3) -> (H//f, W//f) float64."""
    g = rgb.astype(np.float64) @ np.array([0.299, 0.587, 0.114])  # (H, W)
    h, w = (g.shape[0] // factor) * factor, (g.shape[1] // factor) * factor
    return g[:h, :w].reshape(h // factor, factor, w // factor, factor).mean(axis=(1, 3))


def _box_mean(x: np.ndarray, k: int) -> np.ndarray:
    """Mean over every k x k window fully inside x (valid convolution). (H, W) -> (H-k+1, W-k+1)."""
    c = np.pad(x, ((1, 0), (1, 0))).cumsum(0).cumsum(1)
    return (c[k:, k:] - c[:-k, k:] - c[k:, :-k] + c[:-k, :-k]) / (k * k)


def ssim(a: np.ndarray, b: np.ndarray, k: int = WINDOW, data_range: float = 255.0) -> float:
    """Mean SSIM of two same-shape grayscale images; 1.0 exactly when a == b."""
    if a.shape != b.shape:
        raise ValueError(f"ssim needs equal shapes, got {a.shape} and {b.shape}")
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    mu_a, mu_b = _box_mean(a, k), _box_mean(b, k)
    var_a = _box_mean(a * a, k) - mu_a * mu_a
    var_b = _box_mean(b * b, k) - mu_b * mu_b
    cov = _box_mean(a * b, k) - mu_a * mu_b
    num = (2 * mu_a * mu_b + c1) * (2 * cov + c2)
    den = (mu_a * mu_a + mu_b * mu_b + c1) * (var_a + var_b + c2)
    return float(np.mean(num / den))


def colour_similarity(a: np.ndarray, b: np.ndarray, bins: int = 8) -> float:
    """Histogram intersection of two RGB images' normalised bins**3 colour histograms."""
    def hist(rgb: np.ndarray) -> np.ndarray:
        q = (rgb.reshape(-1, 3).astype(np.int64) * bins) // 256  # (N, 3) bin per channel
        idx = (q[:, 0] * bins + q[:, 1]) * bins + q[:, 2]
        return np.bincount(idx, minlength=bins**3) / max(len(idx), 1)
    return float(np.minimum(hist(a), hist(b)).sum())


def text_similarity(a: str, b: str) -> float:
    """F1 of word multisets (lower-cased \\w+ tokens); two empty texts are identical."""
    wa, wb = Counter(re.findall(r"\w+", a.lower())), Counter(re.findall(r"\w+", b.lower()))
    total = sum(wa.values()) + sum(wb.values())
    return 1.0 if total == 0 else 2.0 * sum((wa & wb).values()) / total


def _best_iou(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """For each box of src (N, 4 as x, y, w, h), the highest IoU with any box of dst (M, 4)."""
    x0 = np.maximum(src[:, None, 0], dst[None, :, 0])
    y0 = np.maximum(src[:, None, 1], dst[None, :, 1])
    x1 = np.minimum(src[:, None, 0] + src[:, None, 2], dst[None, :, 0] + dst[None, :, 2])
    y1 = np.minimum(src[:, None, 1] + src[:, None, 3], dst[None, :, 1] + dst[None, :, 3])
    inter = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)  # (N, M)
    union = (src[:, 2] * src[:, 3])[:, None] + (dst[:, 2] * dst[:, 3])[None, :] - inter
    return (inter / np.maximum(union, 1e-9)).max(axis=1)


def layout_similarity(a: list, b: list, max_boxes: int = MAX_BOXES) -> float:
    """Symmetric mean best-match IoU of two lists of [x, y, w, h] element boxes."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    ba = np.asarray(a[:max_boxes], dtype=np.float64)
    bb = np.asarray(b[:max_boxes], dtype=np.float64)
    return float(0.5 * (_best_iou(ba, bb).mean() + _best_iou(bb, ba).mean()))


def similarity(cand_png: bytes, cand_text: str, cand_boxes: list,
               ref_png: bytes, ref_text: str, ref_boxes: list) -> dict[str, float]:
    """The parts and the weighted `score`, all in [0, 1]."""
    ca, ra = decode_png(cand_png), decode_png(ref_png)
    if ca.shape != ra.shape:  # same renderer and viewport, so only a misconfiguration gets here
        raise ValueError(f"screenshots differ in size: {ca.shape} vs {ra.shape}")
    parts = {
        "ssim": max(0.0, ssim(gray_small(ca), gray_small(ra))),
        "colour": colour_similarity(ca, ra),
        "text": text_similarity(cand_text, ref_text),
        "layout": layout_similarity(cand_boxes, ref_boxes),
    }
    score = sum(WEIGHTS[k] * v for k, v in parts.items())
    return {**parts, "score": min(1.0, max(0.0, round(score, 6)))}
