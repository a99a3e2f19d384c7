import { useState } from "react";

type StarRatingProps = { max?: number; initial?: number };

export default function StarRating({ max = 5, initial = 3 }: StarRatingProps) {
  const [rating, setRating] = useState(initial);
  const [hover, setHover] = useState(0);
  const shown = hover || rating;
  return (
    <div style={{ fontFamily: "sans-serif", display: "flex", alignItems: "center", gap: 8 }}>
      <div onMouseLeave={() => setHover(0)}>
        {Array.from({ length: max }, (_, i) => i + 1).map((n) => (
          <button
            key={n}
            aria-label={`${n} star${n > 1 ? "s" : ""}`}
            onClick={() => setRating(n)}
            onMouseEnter={() => setHover(n)}
            style={{ border: "none", background: "none", fontSize: 32, cursor: "pointer", color: n <= shown ? "#f59e0b" : "#d1d5db" }}
          >
            ★
          </button>
        ))}
      </div>
      <span style={{ color: "#374151" }}>
        {rating} / {max}
      </span>
    </div>
  );
}
