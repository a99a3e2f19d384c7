import { useState } from "react";

type ProfileCardProps = { name?: string; title?: string; followers?: number; bio?: string };

export default function ProfileCard({
  name = "Mina Okafor",
  title = "Product designer",
  followers = 1280,
  bio = "Designing calm interfaces for busy people.",
}: ProfileCardProps) {
  const [following, setFollowing] = useState(false);
  const count = followers + (following ? 1 : 0);
  return (
    <div style={{ fontFamily: "sans-serif", width: 260, padding: 24, textAlign: "center", borderRadius: 16, background: "linear-gradient(#fef3c7, #ffffff)" }}>
      <div style={{ width: 72, height: 72, borderRadius: "50%", background: "#f59e0b", margin: "0 auto", display: "flex", alignItems: "center", justifyContent: "center", color: "white", fontSize: 28 }}>
        {name.charAt(0)}
      </div>
      <h3 style={{ marginBottom: 2 }}>{name}</h3>
      <p style={{ marginTop: 0, color: "#78716c" }}>{title}</p>
      <p style={{ fontSize: 14 }}>{bio}</p>
      <p>
        <strong>{count.toLocaleString("en-US")}</strong> followers
      </p>
      <button
        onClick={() => setFollowing(!following)}
        style={{ padding: "8px 24px", borderRadius: 20, border: "1px solid #b45309", background: following ? "white" : "#b45309", color: following ? "#b45309" : "white" }}
      >
        {following ? "Following" : "Follow"}
      </button>
    </div>
  );
}
