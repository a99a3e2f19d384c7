import { useState } from "react";

type DropdownProps = { options?: string[]; placeholder?: string };

export default function Dropdown({ options = ["Red", "Green", "Blue", "Purple"], placeholder = "Choose a color" }: DropdownProps) {
  const [open, setOpen] = useState(false);
  const [selected, setSelected] = useState<string | null>(null);
  return (
    <div style={{ fontFamily: "sans-serif", position: "relative", width: 220 }}>
      <button
        aria-haspopup="listbox"
        aria-expanded={open}
        onClick={() => setOpen(!open)}
        style={{ width: "100%", padding: "8px 12px", textAlign: "left", border: "1px solid #9ca3af", borderRadius: 6, background: "white" }}
      >
        {selected ?? placeholder} <span style={{ float: "right" }}>{open ? "▴" : "▾"}</span>
      </button>
      {open && (
        <ul
          role="listbox"
          style={{ position: "absolute", top: "100%", left: 0, right: 0, margin: 0, padding: 0, listStyle: "none", border: "1px solid #9ca3af", background: "white" }}
        >
          {options.map((opt) => (
            <li
              key={opt}
              role="option"
              aria-selected={opt === selected}
              onClick={() => {
                setSelected(opt);
                setOpen(false);
              }}
              style={{ padding: "6px 12px", cursor: "pointer", background: opt === selected ? "#e0e7ff" : "white" }}
            >
              {opt}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
