import { useState } from "react";

type Toast = { id: number; text: string };
type ToastStackProps = { message?: string };

export default function ToastStack({ message = "Saved" }: ToastStackProps) {
  const [toasts, setToasts] = useState<Toast[]>([]);
  const [next, setNext] = useState(1);
  const push = () => {
    setToasts([...toasts, { id: next, text: `${message} #${next}` }]);
    setNext(next + 1);
  };
  return (
    <div style={{ fontFamily: "sans-serif", position: "relative", width: 360, height: 260, padding: 16, background: "#f8fafc" }}>
      <button onClick={push}>Show toast</button>
      <div style={{ position: "absolute", right: 16, bottom: 16, display: "flex", flexDirection: "column", gap: 8 }}>
        {toasts.map((t) => (
          <div
            key={t.id}
            role="status"
            style={{ display: "flex", alignItems: "center", gap: 12, padding: "10px 14px", background: "#0f172a", color: "white", borderRadius: 8 }}
          >
            <span>{t.text}</span>
            <button aria-label="close" onClick={() => setToasts(toasts.filter((x) => x.id !== t.id))} style={{ background: "none", border: "none", color: "white" }}>
              ✕
            </button>
          </div>
        ))}
      </div>
    </div>
  );
}
