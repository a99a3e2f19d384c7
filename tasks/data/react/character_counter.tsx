import { useState } from "react";

type CharacterCounterProps = { maxLength?: number; placeholder?: string };

export default function CharacterCounter({ maxLength = 140, placeholder = "What's happening?" }: CharacterCounterProps) {
  const [text, setText] = useState("");
  const used = text.length;
  const nearLimit = used > maxLength * 0.9;
  return (
    <div style={{ fontFamily: "sans-serif", width: 360 }}>
      <textarea
        value={text}
        placeholder={placeholder}
        maxLength={maxLength}
        onChange={(e) => setText(e.target.value)}
        rows={4}
        style={{ width: "100%", boxSizing: "border-box", padding: 8, fontSize: 15, borderRadius: 8, border: "1px solid #cbd5e1" }}
      />
      <div style={{ textAlign: "right", fontSize: 13, color: nearLimit ? "#dc2626" : "#64748b", fontWeight: nearLimit ? 700 : 400 }}>
        {used} / {maxLength}
      </div>
    </div>
  );
}
