import { useState } from "react";

type VotingPollProps = { question?: string; options?: string[] };

export default function VotingPoll({
  question = "Which language should we learn next?",
  options = ["Rust", "Go", "Elixir", "Zig"],
}: VotingPollProps) {
  const [votes, setVotes] = useState<number[]>(options.map(() => 0));
  const [choice, setChoice] = useState<number | null>(null);
  const total = votes.reduce((a, b) => a + b, 0);
  const vote = (i: number) => {
    if (choice !== null) return;
    setVotes(votes.map((v, j) => (j === i ? v + 1 : v)));
    setChoice(i);
  };
  return (
    <div style={{ fontFamily: "sans-serif", width: 340, padding: 16, border: "1px solid #ddd6fe", borderRadius: 12 }}>
      <h3 style={{ marginTop: 0 }}>{question}</h3>
      {options.map((opt, i) => {
        const pct = total ? Math.round((votes[i] / total) * 100) : 0;
        return (
          <button
            key={opt}
            onClick={() => vote(i)}
            disabled={choice !== null}
            style={{ position: "relative", display: "block", width: "100%", marginBottom: 6, padding: 8, textAlign: "left", border: "1px solid #a78bfa", borderRadius: 6, background: "white", overflow: "hidden" }}
          >
            <span style={{ position: "absolute", inset: 0, width: `${pct}%`, background: "#ede9fe" }} />
            <span style={{ position: "relative" }}>
              {opt} {choice !== null && `— ${pct}%`} {choice === i && "✓"}
            </span>
          </button>
        );
      })}
      <small>{total} vote{total === 1 ? "" : "s"}</small>
    </div>
  );
}
