import { useState } from "react";

type ProductCardProps = { title?: string; price?: number; color?: string };

export default function ProductCard({ title = "Trail Running Shoe", price = 89.5, color = "#0ea5e9" }: ProductCardProps) {
  const [inCart, setInCart] = useState(false);
  return (
    <div style={{ fontFamily: "sans-serif", width: 240, borderRadius: 12, overflow: "hidden", boxShadow: "0 4px 14px rgba(0,0,0,0.15)" }}>
      <div style={{ height: 140, background: color, display: "flex", alignItems: "center", justifyContent: "center", color: "white", fontSize: 40 }}>
        👟
      </div>
      <div style={{ padding: 16 }}>
        <h3 style={{ margin: "0 0 4px" }}>{title}</h3>
        <p style={{ margin: "0 0 12px", fontSize: 18, fontWeight: 700 }}>${price.toFixed(2)}</p>
        <button
          onClick={() => setInCart(!inCart)}
          style={{ width: "100%", padding: 8, border: "none", borderRadius: 6, color: "white", background: inCart ? "#16a34a" : "#111827" }}
        >
          {inCart ? "In cart ✓" : "Add to cart"}
        </button>
      </div>
    </div>
  );
}
