import { useState } from "react";

type Item = { name: string; price: number; qty: number };
type ShoppingCartProps = { items?: Item[] };

const DEFAULT_ITEMS: Item[] = [
  { name: "Notebook", price: 4.5, qty: 2 },
  { name: "Pen", price: 1.25, qty: 3 },
  { name: "Backpack", price: 39, qty: 1 },
];

export default function ShoppingCart({ items = DEFAULT_ITEMS }: ShoppingCartProps) {
  const [cart, setCart] = useState(items);
  const change = (name: string, delta: number) =>
    setCart(cart.map((it) => (it.name === name ? { ...it, qty: it.qty + delta } : it)).filter((it) => it.qty > 0));
  const total = cart.reduce((sum, it) => sum + it.price * it.qty, 0);
  return (
    <div style={{ fontFamily: "sans-serif", width: 340, padding: 16, border: "1px solid #e5e7eb", borderRadius: 10 }}>
      <h3 style={{ marginTop: 0 }}>Cart</h3>
      {cart.length === 0 && <p>Your cart is empty.</p>}
      {cart.map((it) => (
        <div key={it.name} style={{ display: "flex", alignItems: "center", gap: 8, padding: "6px 0" }}>
          <span style={{ flex: 1 }}>{it.name}</span>
          <button aria-label={`less ${it.name}`} onClick={() => change(it.name, -1)}>
            −
          </button>
          <span style={{ width: 20, textAlign: "center" }}>{it.qty}</span>
          <button aria-label={`more ${it.name}`} onClick={() => change(it.name, 1)}>
            +
          </button>
          <span style={{ width: 64, textAlign: "right" }}>${(it.price * it.qty).toFixed(2)}</span>
        </div>
      ))}
      <div style={{ borderTop: "2px solid #111827", marginTop: 8, paddingTop: 8, display: "flex", justifyContent: "space-between", fontWeight: 700 }}>
        <span>Total</span>
        <span>${total.toFixed(2)}</span>
      </div>
    </div>
  );
}
