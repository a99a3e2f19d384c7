import { useEffect, useState } from "react";

type Phase = "idle" | "saving" | "saved";
type LoadingButtonProps = { label?: string; durationMs?: number };

export default function LoadingButton({ label = "Save changes", durationMs = 1500 }: LoadingButtonProps) {
  const [phase, setPhase] = useState<Phase>("idle");

  useEffect(() => {
    if (phase !== "saving") return;
    const id = setTimeout(() => setPhase("saved"), durationMs);
    return () => clearTimeout(id);
  }, [phase, durationMs]);

  const text = phase === "saving" ? "Saving…" : phase === "saved" ? "Saved ✓" : label;
  return (
    <div style={{ fontFamily: "sans-serif", padding: 16 }}>
      <style>{"@keyframes spin { to { transform: rotate(360deg); } }"}</style>
      <button
        disabled={phase === "saving"}
        onClick={() => setPhase("saving")}
        style={{
          display: "inline-flex",
          alignItems: "center",
          gap: 8,
          padding: "10px 20px",
          border: "none",
          borderRadius: 8,
          color: "white",
          background: phase === "saved" ? "#15803d" : "#4f46e5",
          opacity: phase === "saving" ? 0.8 : 1,
        }}
      >
        {phase === "saving" && (
          <span style={{ width: 14, height: 14, border: "2px solid white", borderTopColor: "transparent", borderRadius: "50%", animation: "spin 0.8s linear infinite" }} />
        )}
        {text}
      </button>
    </div>
  );
}
