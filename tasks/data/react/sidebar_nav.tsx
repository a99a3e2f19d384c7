import { useState } from "react";

type NavItem = { icon: string; label: string };
type SidebarNavProps = { items?: NavItem[] };

const DEFAULT_ITEMS: NavItem[] = [
  { icon: "🏠", label: "Home" },
  { icon: "📊", label: "Reports" },
  { icon: "👥", label: "Team" },
  { icon: "⚙️", label: "Settings" },
];

export default function SidebarNav({ items = DEFAULT_ITEMS }: SidebarNavProps) {
  const [active, setActive] = useState(0);
  const [collapsed, setCollapsed] = useState(false);
  return (
    <nav style={{ fontFamily: "sans-serif", width: collapsed ? 56 : 200, height: 320, background: "#1e293b", color: "#e2e8f0", padding: 8, boxSizing: "border-box" }}>
      <button
        aria-label={collapsed ? "expand sidebar" : "collapse sidebar"}
        onClick={() => setCollapsed(!collapsed)}
        style={{ width: "100%", marginBottom: 12, background: "#334155", color: "inherit", border: "none", padding: 6, borderRadius: 4 }}
      >
        {collapsed ? "»" : "« Collapse"}
      </button>
      {items.map((item, i) => (
        <button
          key={item.label}
          title={item.label}
          onClick={() => setActive(i)}
          style={{
            display: "flex",
            gap: 10,
            width: "100%",
            padding: "8px 10px",
            marginBottom: 4,
            border: "none",
            borderRadius: 6,
            color: "inherit",
            textAlign: "left",
            background: i === active ? "#3b82f6" : "transparent",
          }}
        >
          <span>{item.icon}</span>
          {!collapsed && <span>{item.label}</span>}
        </button>
      ))}
    </nav>
  );
}
