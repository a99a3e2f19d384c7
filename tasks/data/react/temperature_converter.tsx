import { useState } from "react";

type TemperatureConverterProps = { initialCelsius?: number };

function round1(x: number): string {
  return String(Math.round(x * 10) / 10);
}

export default function TemperatureConverter({ initialCelsius = 20 }: TemperatureConverterProps) {
  const [celsius, setCelsius] = useState(String(initialCelsius));
  const [fahrenheit, setFahrenheit] = useState(round1((initialCelsius * 9) / 5 + 32));

  const onCelsius = (text: string) => {
    setCelsius(text);
    const c = parseFloat(text);
    if (!Number.isNaN(c)) setFahrenheit(round1((c * 9) / 5 + 32));
  };
  const onFahrenheit = (text: string) => {
    setFahrenheit(text);
    const f = parseFloat(text);
    if (!Number.isNaN(f)) setCelsius(round1(((f - 32) * 5) / 9));
  };
  const box = { width: 90, padding: 6, fontSize: 16 };
  return (
    <div style={{ fontFamily: "sans-serif", display: "flex", alignItems: "center", gap: 10, padding: 16, background: "#ecfeff", borderRadius: 10 }}>
      <label>
        <input type="number" value={celsius} onChange={(e) => onCelsius(e.target.value)} style={box} /> °C
      </label>
      <span>=</span>
      <label>
        <input type="number" value={fahrenheit} onChange={(e) => onFahrenheit(e.target.value)} style={box} /> °F
      </label>
    </div>
  );
}
