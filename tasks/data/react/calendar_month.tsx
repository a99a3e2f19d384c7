import { useState } from "react";

type CalendarMonthProps = { year?: number; month?: number };

const NAMES = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

export default function CalendarMonth({ year = 2024, month = 2 }: CalendarMonthProps) {
  const [selected, setSelected] = useState<number | null>(null);
  // month is 1-based in the props; Date wants 0-based. Day 0 of the next month is this month's last day.
  const firstWeekday = new Date(year, month - 1, 1).getDay();
  const days = new Date(year, month, 0).getDate();
  const cells: (number | null)[] = [...Array<null>(firstWeekday).fill(null), ...Array.from({ length: days }, (_, i) => i + 1)];
  return (
    <div style={{ fontFamily: "sans-serif", width: 280 }}>
      <h3 style={{ textAlign: "center" }}>
        {NAMES[month - 1]} {year}
      </h3>
      <div style={{ display: "grid", gridTemplateColumns: "repeat(7, 1fr)", gap: 4, textAlign: "center" }}>
        {["Su", "Mo", "Tu", "We", "Th", "Fr", "Sa"].map((d) => (
          <strong key={d} style={{ fontSize: 12, color: "#6b7280" }}>
            {d}
          </strong>
        ))}
        {cells.map((day, i) =>
          day === null ? (
            <span key={`blank-${i}`} />
          ) : (
            <button
              key={day}
              onClick={() => setSelected(day)}
              style={{ padding: 6, border: "none", borderRadius: 6, background: day === selected ? "#2563eb" : "#f3f4f6", color: day === selected ? "white" : "#111827" }}
            >
              {day}
            </button>
          )
        )}
      </div>
      <p>{selected ? `Selected: ${NAMES[month - 1]} ${selected}, ${year}` : "Pick a day"}</p>
    </div>
  );
}
