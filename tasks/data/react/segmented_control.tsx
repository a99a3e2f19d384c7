import { useState } from "react";

type SegmentedControlProps = { options?: string[]; initial?: string };

export default function SegmentedControl({ options = ["Day", "Week", "Month"], initial = "Week" }: SegmentedControlProps) {
  const [value, setValue] = useState(initial);
  return (
    <div style={{ fontFamily: "sans-serif" }}>
      <div role="radiogroup" style={{ display: "inline-flex", padding: 3, background: "#e5e7eb", borderRadius: 10 }}>
        {options.map((opt) => (
          <button
            key={opt}
            role="radio"
            aria-checked={opt === value}
            onClick={() => setValue(opt)}
            style={{
              padding: "6px 18px",
              border: "none",
              borderRadius: 8,
              background: opt === value ? "white" : "transparent",
              boxShadow: opt === value ? "0 1px 3px rgba(0,0,0,0.2)" : "none",
              fontWeight: opt === value ? 600 : 400,
              cursor: "pointer",
            }}
          >
            {opt}
          </button>
        ))}
      </div>
      <p style={{ color: "#4b5563" }}>Showing: {value}</p>
    </div>
  );
}
