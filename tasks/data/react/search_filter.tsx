import { useState } from "react";

type SearchFilterProps = { items?: string[] };

const FRUITS = ["Apple", "Apricot", "Banana", "Blueberry", "Cherry", "Grape", "Mango", "Orange", "Peach", "Pear"];

export default function SearchFilter({ items = FRUITS }: SearchFilterProps) {
  const [query, setQuery] = useState("");
  const matches = items.filter((item) => item.toLowerCase().includes(query.trim().toLowerCase()));
  return (
    <div style={{ fontFamily: "sans-serif", width: 280, padding: 16, border: "1px solid #e5e7eb", borderRadius: 10 }}>
      <input
        type="search"
        placeholder="Search fruits…"
        value={query}
        onChange={(e) => setQuery(e.target.value)}
        style={{ width: "100%", padding: 8, boxSizing: "border-box", borderRadius: 6, border: "1px solid #9ca3af" }}
      />
      <p style={{ color: "#6b7280", fontSize: 13 }}>
        {matches.length} result{matches.length === 1 ? "" : "s"}
      </p>
      {matches.length === 0 ? (
        <p style={{ color: "#b91c1c" }}>No matches</p>
      ) : (
        <ul style={{ margin: 0, paddingLeft: 18 }}>
          {matches.map((m) => (
            <li key={m}>{m}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
