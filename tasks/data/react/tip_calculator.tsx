import { useState } from "react";

type TipCalculatorProps = { initialBill?: number; tipOptions?: number[] };

export default function TipCalculator({ initialBill = 50, tipOptions = [10, 15, 20] }: TipCalculatorProps) {
  const [bill, setBill] = useState(String(initialBill));
  const [tip, setTip] = useState(tipOptions[1] ?? 0);
  const [people, setPeople] = useState(1);
  const amount = parseFloat(bill);
  const valid = !Number.isNaN(amount) && amount >= 0;
  const total = valid ? amount * (1 + tip / 100) : 0;
  return (
    <div style={{ fontFamily: "sans-serif", width: 280, padding: 20, background: "#f0fdfa", borderRadius: 12 }}>
      <label style={{ display: "block" }}>
        Bill
        <input type="number" value={bill} onChange={(e) => setBill(e.target.value)} style={{ display: "block", width: "100%", padding: 6 }} />
      </label>
      <div style={{ margin: "12px 0", display: "flex", gap: 6 }}>
        {tipOptions.map((t) => (
          <button
            key={t}
            onClick={() => setTip(t)}
            style={{ flex: 1, padding: 6, border: "none", borderRadius: 6, background: t === tip ? "#0d9488" : "#ccfbf1", color: t === tip ? "white" : "#134e4a" }}
          >
            {t}%
          </button>
        ))}
      </div>
      <label style={{ display: "block" }}>
        People
        <input type="number" min={1} value={people} onChange={(e) => setPeople(Math.max(1, Number(e.target.value) || 1))} style={{ display: "block", width: "100%", padding: 6 }} />
      </label>
      <p style={{ fontSize: 20, fontWeight: 700 }}>{valid ? `$${(total / people).toFixed(2)} per person` : "Enter a valid bill"}</p>
    </div>
  );
}
