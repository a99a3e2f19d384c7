import { useState } from "react";

type VolumeSliderProps = { initial?: number };

function icon(volume: number): string {
  if (volume === 0) return "🔇";
  if (volume < 50) return "🔉";
  return "🔊";
}

export default function VolumeSlider({ initial = 40 }: VolumeSliderProps) {
  const [volume, setVolume] = useState(initial);
  return (
    <div style={{ fontFamily: "sans-serif", display: "flex", alignItems: "center", gap: 12, padding: 12, background: "#fdf4ff", borderRadius: 24, width: 300 }}>
      <button aria-label="mute" onClick={() => setVolume(0)} style={{ fontSize: 22, border: "none", background: "none", cursor: "pointer" }}>
        {icon(volume)}
      </button>
      <input
        type="range"
        min={0}
        max={100}
        value={volume}
        aria-label="volume"
        onChange={(e) => setVolume(Number(e.target.value))}
        style={{ flex: 1, accentColor: "#c026d3" }}
      />
      <span style={{ width: 32, textAlign: "right" }}>{volume}</span>
    </div>
  );
}
