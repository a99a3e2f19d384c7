import { useState } from "react";

type BreadcrumbsProps = { items?: string[] };

export default function Breadcrumbs({ items = ["Home", "Products", "Shoes"] }: BreadcrumbsProps) {
  const [trail, setTrail] = useState(items);
  return (
    <nav aria-label="breadcrumb" style={{ fontFamily: "sans-serif", fontSize: 15 }}>
      <ol style={{ listStyle: "none", display: "flex", padding: 0, margin: 0 }}>
        {trail.map((item, i) => {
          const last = i === trail.length - 1;
          return (
            <li key={item + i} style={{ display: "flex", alignItems: "center" }}>
              {last ? (
                <strong aria-current="page">{item}</strong>
              ) : (
                <button
                  onClick={() => setTrail(trail.slice(0, i + 1))}
                  style={{ border: "none", background: "none", color: "#2563eb", textDecoration: "underline", cursor: "pointer", padding: 0 }}
                >
                  {item}
                </button>
              )}
              {!last && <span style={{ margin: "0 8px", color: "#9ca3af" }}>/</span>}
            </li>
          );
        })}
      </ol>
    </nav>
  );
}
