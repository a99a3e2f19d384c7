import { useState } from "react";

type User = { name: string; online: boolean };
type UserListProps = { users?: User[] };

const DEFAULT_USERS: User[] = [
  { name: "Priya", online: true },
  { name: "Tomás", online: false },
  { name: "Chen", online: true },
  { name: "Olga", online: false },
  { name: "Kwame", online: true },
];

export default function UserList({ users = DEFAULT_USERS }: UserListProps) {
  const [onlineOnly, setOnlineOnly] = useState(false);
  const shown = onlineOnly ? users.filter((u) => u.online) : users;
  return (
    <div style={{ fontFamily: "sans-serif", width: 260, padding: 12, border: "1px solid #e5e7eb", borderRadius: 10 }}>
      <label style={{ fontSize: 14 }}>
        <input type="checkbox" checked={onlineOnly} onChange={(e) => setOnlineOnly(e.target.checked)} /> Online only
      </label>
      <ul style={{ listStyle: "none", padding: 0 }}>
        {shown.map((u) => (
          <li key={u.name} style={{ display: "flex", alignItems: "center", gap: 10, padding: "6px 0" }}>
            <span style={{ position: "relative", width: 32, height: 32, borderRadius: "50%", background: "#c7d2fe", display: "flex", alignItems: "center", justifyContent: "center" }}>
              {u.name[0]}
              <span
                aria-label={u.online ? "online" : "offline"}
                style={{ position: "absolute", right: 0, bottom: 0, width: 10, height: 10, borderRadius: "50%", border: "2px solid white", background: u.online ? "#22c55e" : "#9ca3af" }}
              />
            </span>
            {u.name}
          </li>
        ))}
      </ul>
      <small>
        {users.filter((u) => u.online).length} of {users.length} online
      </small>
    </div>
  );
}
