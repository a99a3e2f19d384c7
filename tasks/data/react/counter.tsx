import { useState } from "react";

type CounterProps = { initial?: number; step?: number };

export default function Counter({ initial = 0, step = 1 }: CounterProps) {
  const [count, setCount] = useState(initial);
  const button = { width: 40, height: 40, fontSize: 20, borderRadius: 8, border: "1px solid #888" };
  return (
    <div style={{ display: "inline-flex", alignItems: "center", gap: 12, padding: 16, fontFamily: "sans-serif" }}>
      <button style={button} aria-label="decrement" onClick={() => setCount(count - step)}>
        −
      </button>
      <span style={{ minWidth: 48, textAlign: "center", fontSize: 28, fontWeight: 700 }}>{count}</span>
      <button style={button} aria-label="increment" onClick={() => setCount(count + step)}>
        +
      </button>
      <button style={{ ...button, width: "auto", padding: "0 12px", fontSize: 14 }} onClick={() => setCount(initial)}>
        Reset
      </button>
    </div>
  );
}
