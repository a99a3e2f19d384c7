type ProgressBarProps = { value?: number; max?: number; label?: string };

export default function ProgressBar({ value = 65, max = 100, label = "Upload" }: ProgressBarProps) {
  const percent = max > 0 ? Math.round((Math.min(max, Math.max(0, value)) / max) * 100) : 0;
  return (
    <div style={{ fontFamily: "sans-serif", width: 300 }}>
      <div style={{ display: "flex", justifyContent: "space-between", marginBottom: 4, fontSize: 14 }}>
        <span>{label}</span>
        <span>{percent}%</span>
      </div>
      <div
        role="progressbar"
        aria-valuenow={percent}
        aria-valuemin={0}
        aria-valuemax={100}
        style={{ height: 12, background: "#e5e7eb", borderRadius: 6, overflow: "hidden" }}
      >
        <div style={{ width: `${percent}%`, height: "100%", background: percent === 100 ? "#16a34a" : "#3b82f6" }} />
      </div>
    </div>
  );
}
