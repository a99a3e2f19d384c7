type Variant = "success" | "warning" | "error" | "info";
type BadgeProps = { text?: string; variant?: Variant };

const COLORS: Record<Variant, { bg: string; fg: string }> = {
  success: { bg: "#dcfce7", fg: "#166534" },
  warning: { bg: "#fef3c7", fg: "#92400e" },
  error: { bg: "#fee2e2", fg: "#991b1b" },
  info: { bg: "#dbeafe", fg: "#1e40af" },
};

export default function Badge({ text = "New", variant = "info" }: BadgeProps) {
  const { bg, fg } = COLORS[variant];
  return (
    <span
      style={{
        display: "inline-block",
        padding: "2px 10px",
        borderRadius: 999,
        background: bg,
        color: fg,
        fontFamily: "sans-serif",
        fontSize: 12,
        fontWeight: 600,
        textTransform: "uppercase",
        letterSpacing: 0.5,
      }}
    >
      {text}
    </span>
  );
}
