import { useState } from "react";

type Message = { from: "me" | "them"; text: string };
type ChatThreadProps = { contact?: string; initial?: Message[] };

const DEFAULT_MESSAGES: Message[] = [
  { from: "them", text: "Are we still on for lunch?" },
  { from: "me", text: "Yes! 12:30 at the usual place." },
];

export default function ChatThread({ contact = "Jo", initial = DEFAULT_MESSAGES }: ChatThreadProps) {
  const [messages, setMessages] = useState(initial);
  const [draft, setDraft] = useState("");
  const send = () => {
    if (!draft.trim()) return;
    setMessages([...messages, { from: "me", text: draft.trim() }]);
    setDraft("");
  };
  return (
    <div style={{ fontFamily: "sans-serif", width: 320, border: "1px solid #d1d5db", borderRadius: 12, overflow: "hidden" }}>
      <div style={{ padding: 10, background: "#0284c7", color: "white", fontWeight: 600 }}>{contact}</div>
      <div style={{ display: "flex", flexDirection: "column", gap: 6, padding: 10, minHeight: 160, background: "#f1f5f9" }}>
        {messages.map((m, i) => (
          <div
            key={i}
            style={{
              alignSelf: m.from === "me" ? "flex-end" : "flex-start",
              maxWidth: "75%",
              padding: "6px 10px",
              borderRadius: 12,
              background: m.from === "me" ? "#0284c7" : "white",
              color: m.from === "me" ? "white" : "#0f172a",
            }}
          >
            {m.text}
          </div>
        ))}
      </div>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          send();
        }}
        style={{ display: "flex", borderTop: "1px solid #d1d5db" }}
      >
        <input value={draft} onChange={(e) => setDraft(e.target.value)} placeholder="Message" style={{ flex: 1, border: "none", padding: 10 }} />
        <button type="submit" style={{ border: "none", background: "none", color: "#0284c7", fontWeight: 700, padding: "0 14px" }}>
          Send
        </button>
      </form>
    </div>
  );
}
