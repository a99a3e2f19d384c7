import { useState } from "react";

type Row = { name: string; role: string; age: number };
type Key = keyof Row;
type DataTableProps = { rows?: Row[] };

const DEFAULT_ROWS: Row[] = [
  { name: "Grace", role: "Engineer", age: 36 },
  { name: "Alan", role: "Researcher", age: 41 },
  { name: "Linus", role: "Maintainer", age: 29 },
  { name: "Barbara", role: "Architect", age: 52 },
];

export default function DataTable({ rows = DEFAULT_ROWS }: DataTableProps) {
  const [sortKey, setSortKey] = useState<Key>("name");
  const [ascending, setAscending] = useState(true);
  const sorted = [...rows].sort((a, b) => {
    const x = a[sortKey];
    const y = b[sortKey];
    const order = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
    return ascending ? order : -order;
  });
  const clickHeader = (key: Key) => {
    if (key === sortKey) setAscending(!ascending);
    else {
      setSortKey(key);
      setAscending(true);
    }
  };
  const columns: Key[] = ["name", "role", "age"];
  return (
    <table style={{ fontFamily: "sans-serif", borderCollapse: "collapse", minWidth: 360 }}>
      <thead>
        <tr>
          {columns.map((key) => (
            <th
              key={key}
              onClick={() => clickHeader(key)}
              style={{ textAlign: "left", padding: 8, background: "#1f2937", color: "white", cursor: "pointer", textTransform: "capitalize" }}
            >
              {key} {sortKey === key ? (ascending ? "▲" : "▼") : ""}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {sorted.map((row, i) => (
          <tr key={row.name} style={{ background: i % 2 ? "#f3f4f6" : "white" }}>
            {columns.map((key) => (
              <td key={key} style={{ padding: 8, borderBottom: "1px solid #e5e7eb" }}>
                {row[key]}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
