import { useState } from "react";

type Todo = { id: number; text: string; done: boolean };
type TodoListProps = { initialTodos?: string[] };

export default function TodoList({ initialTodos = ["Buy milk", "Write report"] }: TodoListProps) {
  const [todos, setTodos] = useState<Todo[]>(initialTodos.map((text, id) => ({ id, text, done: false })));
  const [draft, setDraft] = useState("");
  const [nextId, setNextId] = useState(initialTodos.length);

  const add = () => {
    const text = draft.trim();
    if (!text) return;
    setTodos([...todos, { id: nextId, text, done: false }]);
    setNextId(nextId + 1);
    setDraft("");
  };
  const toggle = (id: number) => setTodos(todos.map((t) => (t.id === id ? { ...t, done: !t.done } : t)));
  const remove = (id: number) => setTodos(todos.filter((t) => t.id !== id));
  const left = todos.filter((t) => !t.done).length;

  return (
    <div style={{ fontFamily: "sans-serif", width: 320, padding: 16, background: "#f9fafb", borderRadius: 12 }}>
      <h3 style={{ marginTop: 0 }}>Todos</h3>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          add();
        }}
        style={{ display: "flex", gap: 8 }}
      >
        <input value={draft} onChange={(e) => setDraft(e.target.value)} placeholder="What needs doing?" style={{ flex: 1, padding: 6 }} />
        <button type="submit">Add</button>
      </form>
      <ul style={{ listStyle: "none", padding: 0 }}>
        {todos.map((t) => (
          <li key={t.id} style={{ display: "flex", alignItems: "center", gap: 8, padding: "4px 0" }}>
            <input type="checkbox" checked={t.done} onChange={() => toggle(t.id)} />
            <span style={{ flex: 1, textDecoration: t.done ? "line-through" : "none", color: t.done ? "#9ca3af" : "#111827" }}>{t.text}</span>
            <button aria-label={`remove ${t.text}`} onClick={() => remove(t.id)}>
              ×
            </button>
          </li>
        ))}
      </ul>
      <small>{left} item{left === 1 ? "" : "s"} left</small>
    </div>
  );
}
