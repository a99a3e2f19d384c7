import { useState } from "react";

type EmptyStateProps = { title?: string; description?: string; actionLabel?: string };

export default function EmptyState({
  title = "No projects yet",
  description = "Create your first project to start tracking work.",
  actionLabel = "New project",
}: EmptyStateProps) {
  const [created, setCreated] = useState(0);
  return (
    <div style={{ fontFamily: "sans-serif", width: 360, padding: 32, textAlign: "center", border: "2px dashed #cbd5e1", borderRadius: 16, color: "#334155" }}>
      <div style={{ fontSize: 48 }}>🗂️</div>
      <h3 style={{ margin: "8px 0" }}>{created > 0 ? `${created} project${created > 1 ? "s" : ""} created` : title}</h3>
      <p style={{ color: "#64748b" }}>{description}</p>
      <button onClick={() => setCreated(created + 1)} style={{ padding: "8px 18px", borderRadius: 8, border: "none", background: "#0f766e", color: "white" }}>
        + {actionLabel}
      </button>
    </div>
  );
}
