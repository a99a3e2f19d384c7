import { useState } from "react";

type Notice = { id: number; text: string; read: boolean };
type NotificationInboxProps = { messages?: string[] };

export default function NotificationInbox({
  messages = ["Sam commented on your post", "Your build passed", "New login from Firefox"],
}: NotificationInboxProps) {
  const [notices, setNotices] = useState<Notice[]>(messages.map((text, id) => ({ id, text, read: false })));
  const unread = notices.filter((n) => !n.read).length;
  return (
    <div style={{ fontFamily: "sans-serif", width: 340, border: "1px solid #e5e7eb", borderRadius: 10 }}>
      <header style={{ display: "flex", justifyContent: "space-between", alignItems: "center", padding: 12, borderBottom: "1px solid #e5e7eb" }}>
        <strong>
          Notifications{" "}
          {unread > 0 && <span style={{ background: "#ef4444", color: "white", borderRadius: 10, padding: "0 7px", fontSize: 12 }}>{unread}</span>}
        </strong>
        <button disabled={unread === 0} onClick={() => setNotices(notices.map((n) => ({ ...n, read: true })))}>
          Mark all read
        </button>
      </header>
      <ul style={{ listStyle: "none", margin: 0, padding: 0 }}>
        {notices.map((n) => (
          <li
            key={n.id}
            onClick={() => setNotices(notices.map((m) => (m.id === n.id ? { ...m, read: true } : m)))}
            style={{ padding: 12, cursor: "pointer", background: n.read ? "white" : "#eff6ff", fontWeight: n.read ? 400 : 600 }}
          >
            {n.read ? "" : "● "}
            {n.text}
          </li>
        ))}
      </ul>
    </div>
  );
}
