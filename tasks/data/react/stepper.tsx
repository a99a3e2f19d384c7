import { useState } from "react";

type StepperProps = { steps?: string[] };

export default function Stepper({ steps = ["Cart", "Shipping", "Payment", "Review"] }: StepperProps) {
  const [current, setCurrent] = useState(0);
  return (
    <div style={{ fontFamily: "sans-serif", width: 460 }}>
      <ol style={{ display: "flex", listStyle: "none", padding: 0, justifyContent: "space-between" }}>
        {steps.map((step, i) => {
          const done = i < current;
          const active = i === current;
          return (
            <li key={step} style={{ display: "flex", flexDirection: "column", alignItems: "center", flex: 1 }}>
              <span
                style={{
                  width: 32,
                  height: 32,
                  borderRadius: "50%",
                  display: "flex",
                  alignItems: "center",
                  justifyContent: "center",
                  background: done ? "#16a34a" : active ? "#2563eb" : "#e5e7eb",
                  color: done || active ? "white" : "#374151",
                  fontWeight: 700,
                }}
              >
                {done ? "✓" : i + 1}
              </span>
              <span style={{ marginTop: 6, fontSize: 13, fontWeight: active ? 700 : 400 }}>{step}</span>
            </li>
          );
        })}
      </ol>
      <div style={{ display: "flex", justifyContent: "space-between" }}>
        <button disabled={current === 0} onClick={() => setCurrent(current - 1)}>
          Back
        </button>
        <button disabled={current === steps.length - 1} onClick={() => setCurrent(current + 1)}>
          Next
        </button>
      </div>
    </div>
  );
}
