import { useState } from "react";

type TooltipProps = { label?: string; text?: string };

export default function Tooltip({ label = "Hover me", text = "Copy to clipboard" }: TooltipProps) {
  const [visible, setVisible] = useState(false);
  return (
    <div style={{ fontFamily: "sans-serif", padding: "48px 24px 16px" }}>
      <span style={{ position: "relative", display: "inline-block" }}>
        <button
          aria-describedby="tooltip"
          onMouseEnter={() => setVisible(true)}
          onMouseLeave={() => setVisible(false)}
          onFocus={() => setVisible(true)}
          onBlur={() => setVisible(false)}
          style={{ padding: "8px 14px", borderRadius: 6, border: "1px solid #6b7280", background: "white" }}
        >
          {label}
        </button>
        {visible && (
          <span
            id="tooltip"
            role="tooltip"
            style={{
              position: "absolute",
              bottom: "calc(100% + 8px)",
              left: "50%",
              transform: "translateX(-50%)",
              whiteSpace: "nowrap",
              background: "#111827",
              color: "white",
              fontSize: 12,
              padding: "4px 8px",
              borderRadius: 4,
            }}
          >
            {text}
          </span>
        )}
      </span>
    </div>
  );
}
