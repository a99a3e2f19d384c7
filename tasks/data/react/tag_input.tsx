import { useState } from "react";
import type { KeyboardEvent } from "react";

type TagInputProps = { initialTags?: string[] };

export default function TagInput({ initialTags = ["react", "typescript"] }: TagInputProps) {
  const [tags, setTags] = useState(initialTags);
  const [draft, setDraft] = useState("");

  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === "Enter") {
      e.preventDefault();
      const tag = draft.trim().toLowerCase();
      if (tag && !tags.includes(tag)) setTags([...tags, tag]);
      setDraft("");
    } else if (e.key === "Backspace" && draft === "" && tags.length > 0) {
      setTags(tags.slice(0, -1));
    }
  };

  return (
    <div
      style={{ fontFamily: "sans-serif", display: "flex", flexWrap: "wrap", gap: 6, width: 360, padding: 8, border: "1px solid #a1a1aa", borderRadius: 8 }}
    >
      {tags.map((tag) => (
        <span key={tag} style={{ display: "inline-flex", alignItems: "center", gap: 4, padding: "2px 8px", background: "#e0f2fe", borderRadius: 12 }}>
          #{tag}
          <button aria-label={`remove ${tag}`} onClick={() => setTags(tags.filter((t) => t !== tag))} style={{ border: "none", background: "none", cursor: "pointer" }}>
            ×
          </button>
        </span>
      ))}
      <input
        value={draft}
        onChange={(e) => setDraft(e.target.value)}
        onKeyDown={onKeyDown}
        placeholder="Add a tag"
        style={{ flex: 1, minWidth: 80, border: "none", outline: "none" }}
      />
    </div>
  );
}
