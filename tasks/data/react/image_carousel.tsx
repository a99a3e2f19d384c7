import { useState } from "react";

type Slide = { caption: string; color: string };
type CarouselProps = { slides?: Slide[] };

const DEFAULT_SLIDES: Slide[] = [
  { caption: "Mountains at dawn", color: "#fb923c" },
  { caption: "Forest trail", color: "#22c55e" },
  { caption: "Ocean cliffs", color: "#0ea5e9" },
  { caption: "Desert night", color: "#6d28d9" },
];

export default function Carousel({ slides = DEFAULT_SLIDES }: CarouselProps) {
  const [index, setIndex] = useState(0);
  const count = slides.length;
  const slide = slides[index];
  const arrow = { position: "absolute" as const, top: "50%", transform: "translateY(-50%)", fontSize: 24, border: "none", background: "rgba(255,255,255,0.7)", borderRadius: "50%", width: 36, height: 36 };
  if (!slide) return <p>No slides</p>;
  return (
    <div style={{ fontFamily: "sans-serif", width: 400 }}>
      <div style={{ position: "relative", height: 200, background: slide.color, borderRadius: 12, display: "flex", alignItems: "flex-end" }}>
        <button aria-label="previous" style={{ ...arrow, left: 8 }} onClick={() => setIndex((index - 1 + count) % count)}>
          ‹
        </button>
        <span style={{ color: "white", padding: 12, fontSize: 18, fontWeight: 600 }}>{slide.caption}</span>
        <button aria-label="next" style={{ ...arrow, right: 8 }} onClick={() => setIndex((index + 1) % count)}>
          ›
        </button>
      </div>
      <div style={{ display: "flex", justifyContent: "center", gap: 6, marginTop: 8 }}>
        {slides.map((s, i) => (
          <button
            key={s.caption}
            aria-label={`slide ${i + 1}`}
            onClick={() => setIndex(i)}
            style={{ width: 10, height: 10, padding: 0, borderRadius: "50%", border: "none", background: i === index ? "#111827" : "#d1d5db" }}
          />
        ))}
      </div>
    </div>
  );
}
