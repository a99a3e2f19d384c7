type StatCardProps = { label?: string; value?: number; previous?: number; unit?: string };

export default function StatCard({ label = "Monthly revenue", value = 48200, previous = 42000, unit = "$" }: StatCardProps) {
  const change = previous === 0 ? 0 : ((value - previous) / previous) * 100;
  const up = change >= 0;
  return (
    <div style={{ fontFamily: "sans-serif", width: 240, padding: 20, borderRadius: 14, background: "white", boxShadow: "0 2px 8px rgba(0,0,0,0.12)" }}>
      <div style={{ fontSize: 13, color: "#6b7280", textTransform: "uppercase" }}>{label}</div>
      <div style={{ fontSize: 32, fontWeight: 800, margin: "6px 0" }}>
        {unit}
        {value.toLocaleString("en-US")}
      </div>
      <span style={{ display: "inline-block", padding: "2px 8px", borderRadius: 6, fontSize: 13, background: up ? "#dcfce7" : "#fee2e2", color: up ? "#15803d" : "#b91c1c" }}>
        {up ? "▲" : "▼"} {Math.abs(change).toFixed(1)}%
      </span>
      <span style={{ fontSize: 12, color: "#9ca3af", marginLeft: 6 }}>vs last month</span>
    </div>
  );
}
