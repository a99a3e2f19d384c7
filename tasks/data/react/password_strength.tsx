import { useState } from "react";

type PasswordStrengthProps = { placeholder?: string };

const LABELS = ["Too weak", "Weak", "Fair", "Good", "Strong"];
const COLORS = ["#d1d5db", "#ef4444", "#f97316", "#eab308", "#22c55e"];

export function strength(pw: string): number {
  let s = 0;
  if (pw.length >= 8) s++;
  if (/[A-Z]/.test(pw) && /[a-z]/.test(pw)) s++;
  if (/\d/.test(pw)) s++;
  if (/[^A-Za-z0-9]/.test(pw)) s++;
  return s;
}

export default function PasswordStrength({ placeholder = "Choose a password" }: PasswordStrengthProps) {
  const [pw, setPw] = useState("");
  const score = strength(pw);
  return (
    <div style={{ fontFamily: "sans-serif", width: 300 }}>
      <input
        type="password"
        value={pw}
        placeholder={placeholder}
        onChange={(e) => setPw(e.target.value)}
        style={{ width: "100%", padding: 8, boxSizing: "border-box" }}
      />
      <div style={{ display: "flex", gap: 4, marginTop: 8 }}>
        {[1, 2, 3, 4].map((n) => (
          <div key={n} style={{ flex: 1, height: 6, borderRadius: 3, background: n <= score ? COLORS[score] : "#e5e7eb" }} />
        ))}
      </div>
      <p style={{ margin: "6px 0 0", fontSize: 13, color: COLORS[score] === "#d1d5db" ? "#6b7280" : COLORS[score] }}>{LABELS[score]}</p>
    </div>
  );
}
