import { useState } from "react";

type Section = { title: string; body: string };
type AccordionProps = { sections?: Section[] };

const DEFAULT_SECTIONS: Section[] = [
  { title: "What is the return policy?", body: "You can return any item within 30 days for a full refund." },
  { title: "How long does shipping take?", body: "Orders arrive in 3 to 5 business days." },
  { title: "Do you ship abroad?", body: "Yes, to over 40 countries." },
];

export default function Accordion({ sections = DEFAULT_SECTIONS }: AccordionProps) {
  const [open, setOpen] = useState<number | null>(0);
  return (
    <div style={{ fontFamily: "sans-serif", width: 380, border: "1px solid #d1d5db", borderRadius: 8 }}>
      {sections.map((s, i) => (
        <div key={s.title} style={{ borderTop: i === 0 ? "none" : "1px solid #d1d5db" }}>
          <button
            aria-expanded={open === i}
            onClick={() => setOpen(open === i ? null : i)}
            style={{ width: "100%", textAlign: "left", padding: 12, border: "none", background: "#f3f4f6", fontWeight: 600, cursor: "pointer" }}
          >
            {open === i ? "▾" : "▸"} {s.title}
          </button>
          {open === i && <p style={{ margin: 0, padding: 12 }}>{s.body}</p>}
        </div>
      ))}
    </div>
  );
}
