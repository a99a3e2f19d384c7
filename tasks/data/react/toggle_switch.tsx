import { useState } from "react";

type ToggleSwitchProps = { label?: string; defaultOn?: boolean };

export default function ToggleSwitch({ label = "Dark mode", defaultOn = false }: ToggleSwitchProps) {
  const [on, setOn] = useState(defaultOn);
  return (
    <label style={{ display: "inline-flex", alignItems: "center", gap: 10, fontFamily: "sans-serif", cursor: "pointer" }}>
      <button
        role="switch"
        aria-checked={on}
        onClick={() => setOn(!on)}
        style={{
          position: "relative",
          width: 52,
          height: 28,
          borderRadius: 14,
          border: "none",
          background: on ? "#22c55e" : "#cbd5e1",
          transition: "background 0.2s",
        }}
      >
        <span
          style={{
            position: "absolute",
            top: 3,
            left: on ? 27 : 3,
            width: 22,
            height: 22,
            borderRadius: "50%",
            background: "white",
            transition: "left 0.2s",
          }}
        />
      </button>
      <span>
        {label}: <strong>{on ? "On" : "Off"}</strong>
      </span>
    </label>
  );
}
