import { useEffect, useState } from "react";

type StopwatchProps = { label?: string };

export default function Stopwatch({ label = "Stopwatch" }: StopwatchProps) {
  const [tenths, setTenths] = useState(0);
  const [running, setRunning] = useState(false);

  useEffect(() => {
    if (!running) return;
    const id = setInterval(() => setTenths((t) => t + 1), 100);
    return () => clearInterval(id);
  }, [running]);

  const minutes = Math.floor(tenths / 600);
  const seconds = ((tenths % 600) / 10).toFixed(1).padStart(4, "0");
  return (
    <div style={{ fontFamily: "monospace", width: 220, padding: 16, background: "#0f172a", color: "#e2e8f0", borderRadius: 12, textAlign: "center" }}>
      <div style={{ fontFamily: "sans-serif", fontSize: 12, textTransform: "uppercase", opacity: 0.7 }}>{label}</div>
      <div style={{ fontSize: 40, margin: "8px 0" }}>
        {minutes}:{seconds}
      </div>
      <button onClick={() => setRunning(!running)} style={{ marginRight: 8 }}>
        {running ? "Stop" : "Start"}
      </button>
      <button
        onClick={() => {
          setRunning(false);
          setTenths(0);
        }}
      >
        Reset
      </button>
    </div>
  );
}
