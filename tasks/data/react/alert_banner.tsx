import { useState } from "react";

type Kind = "info" | "success" | "warning" | "error";
type AlertBannerProps = { message?: string; kind?: Kind };

const STYLES: Record<Kind, { bg: string; border: string; icon: string }> = {
  info: { bg: "#eff6ff", border: "#3b82f6", icon: "ℹ" },
  success: { bg: "#f0fdf4", border: "#22c55e", icon: "✔" },
  warning: { bg: "#fffbeb", border: "#f59e0b", icon: "⚠" },
  error: { bg: "#fef2f2", border: "#ef4444", icon: "✖" },
};

export default function AlertBanner({ message = "Your changes were saved.", kind = "success" }: AlertBannerProps) {
  const [dismissed, setDismissed] = useState(false);
  if (dismissed) return null;
  const s = STYLES[kind];
  return (
    <div
      role="alert"
      style={{
        fontFamily: "sans-serif",
        display: "flex",
        alignItems: "center",
        gap: 10,
        width: 420,
        padding: "12px 16px",
        background: s.bg,
        borderLeft: `5px solid ${s.border}`,
        borderRadius: 6,
      }}
    >
      <span style={{ color: s.border, fontSize: 18 }}>{s.icon}</span>
      <span style={{ flex: 1 }}>{message}</span>
      <button aria-label="dismiss" onClick={() => setDismissed(true)} style={{ border: "none", background: "none", fontSize: 18, cursor: "pointer" }}>
        ×
      </button>
    </div>
  );
}
