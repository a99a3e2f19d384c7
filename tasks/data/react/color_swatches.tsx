import { useState } from "react";

type ColorSwatchesProps = { colors?: string[] };

const DEFAULT_COLORS = ["#ef4444", "#f59e0b", "#10b981", "#3b82f6", "#8b5cf6", "#111827"];

export default function ColorSwatches({ colors = DEFAULT_COLORS }: ColorSwatchesProps) {
  const [selected, setSelected] = useState(colors[0] ?? "#ffffff");
  return (
    <div style={{ fontFamily: "sans-serif", padding: 16 }}>
      <div style={{ display: "flex", gap: 8 }}>
        {colors.map((c) => (
          <button
            key={c}
            aria-label={c}
            aria-pressed={c === selected}
            onClick={() => setSelected(c)}
            style={{
              width: 32,
              height: 32,
              borderRadius: "50%",
              background: c,
              cursor: "pointer",
              border: c === selected ? "3px solid #111827" : "3px solid white",
              boxShadow: "0 0 0 1px #d1d5db",
            }}
          />
        ))}
      </div>
      <div style={{ marginTop: 16, display: "flex", alignItems: "center", gap: 12 }}>
        <div style={{ width: 80, height: 80, borderRadius: 12, background: selected }} />
        <code style={{ fontSize: 18 }}>{selected}</code>
      </div>
    </div>
  );
}
