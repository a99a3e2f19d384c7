import { useState } from "react";

type Tab = { label: string; content: string };
type TabsProps = { tabs?: Tab[] };

const DEFAULT_TABS: Tab[] = [
  { label: "Overview", content: "A quick summary of the project." },
  { label: "Details", content: "Specifications, dimensions and materials." },
  { label: "Reviews", content: "4.6 out of 5 from 212 reviews." },
];

export default function Tabs({ tabs = DEFAULT_TABS }: TabsProps) {
  const [active, setActive] = useState(0);
  return (
    <div style={{ fontFamily: "sans-serif", width: 420 }}>
      <div role="tablist" style={{ display: "flex", borderBottom: "1px solid #e5e7eb" }}>
        {tabs.map((tab, i) => (
          <button
            key={tab.label}
            role="tab"
            aria-selected={i === active}
            onClick={() => setActive(i)}
            style={{
              padding: "10px 16px",
              border: "none",
              background: "none",
              cursor: "pointer",
              borderBottom: i === active ? "3px solid #7c3aed" : "3px solid transparent",
              color: i === active ? "#7c3aed" : "#4b5563",
              fontWeight: i === active ? 700 : 400,
            }}
          >
            {tab.label}
          </button>
        ))}
      </div>
      <div role="tabpanel" style={{ padding: 16 }}>
        {tabs[active]?.content}
      </div>
    </div>
  );
}
