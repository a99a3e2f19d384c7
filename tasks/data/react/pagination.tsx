import { useState } from "react";

type PaginationProps = { totalPages?: number; initialPage?: number };

export default function Pagination({ totalPages = 10, initialPage = 1 }: PaginationProps) {
  const [page, setPage] = useState(initialPage);
  const go = (p: number) => setPage(Math.min(totalPages, Math.max(1, p)));
  const base = { minWidth: 36, height: 36, margin: 2, borderRadius: 6, border: "1px solid #d1d5db", cursor: "pointer" };
  return (
    <nav aria-label="pagination" style={{ fontFamily: "sans-serif", display: "flex", alignItems: "center" }}>
      <button style={base} disabled={page === 1} onClick={() => go(page - 1)}>
        Prev
      </button>
      {Array.from({ length: totalPages }, (_, i) => i + 1).map((p) => (
        <button
          key={p}
          aria-current={p === page ? "page" : undefined}
          onClick={() => go(p)}
          style={{ ...base, background: p === page ? "#2563eb" : "white", color: p === page ? "white" : "#111827" }}
        >
          {p}
        </button>
      ))}
      <button style={base} disabled={page === totalPages} onClick={() => go(page + 1)}>
        Next
      </button>
    </nav>
  );
}
