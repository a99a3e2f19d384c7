type Event = { date: string; title: string; detail: string };
type TimelineProps = { events?: Event[] };

const DEFAULT_EVENTS: Event[] = [
  { date: "2023-01", title: "Founded", detail: "Three people and a whiteboard." },
  { date: "2023-09", title: "First release", detail: "Version 1.0 shipped to 50 users." },
  { date: "2024-04", title: "Series A", detail: "Raised funds and hired ten engineers." },
  { date: "2025-02", title: "1M users", detail: "Crossed one million monthly users." },
];

export default function Timeline({ events = DEFAULT_EVENTS }: TimelineProps) {
  return (
    <ol style={{ fontFamily: "sans-serif", listStyle: "none", margin: 0, padding: "0 0 0 24px", borderLeft: "3px solid #a5b4fc", width: 340 }}>
      {events.map((ev) => (
        <li key={ev.date + ev.title} style={{ position: "relative", marginBottom: 20 }}>
          <span style={{ position: "absolute", left: -33, top: 2, width: 14, height: 14, borderRadius: "50%", background: "#4f46e5", border: "3px solid white" }} />
          <time style={{ fontSize: 12, color: "#6366f1", fontWeight: 700 }}>{ev.date}</time>
          <h4 style={{ margin: "2px 0" }}>{ev.title}</h4>
          <p style={{ margin: 0, color: "#4b5563", fontSize: 14 }}>{ev.detail}</p>
        </li>
      ))}
    </ol>
  );
}
