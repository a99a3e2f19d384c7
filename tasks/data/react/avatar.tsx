type AvatarProps = { name?: string; size?: number };

const PALETTE = ["#ef4444", "#f97316", "#eab308", "#22c55e", "#06b6d4", "#6366f1", "#a855f7", "#ec4899"];

function initials(name: string): string {
  const parts = name.trim().split(/\s+/).filter(Boolean);
  if (parts.length === 0) return "?";
  const first = parts[0][0];
  const last = parts.length > 1 ? parts[parts.length - 1][0] : "";
  return (first + last).toUpperCase();
}

export default function Avatar({ name = "Ada Lovelace", size = 48 }: AvatarProps) {
  let sum = 0;
  for (const ch of name) sum += ch.charCodeAt(0);
  return (
    <div
      title={name}
      style={{
        width: size,
        height: size,
        borderRadius: "50%",
        background: PALETTE[sum % PALETTE.length],
        color: "white",
        display: "flex",
        alignItems: "center",
        justifyContent: "center",
        fontFamily: "sans-serif",
        fontWeight: 700,
        fontSize: size * 0.4,
      }}
    >
      {initials(name)}
    </div>
  );
}
