import { useState } from "react";

type LoginFormProps = { title?: string };

export default function LoginForm({ title = "Sign in" }: LoginFormProps) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [submitted, setSubmitted] = useState(false);
  const [user, setUser] = useState<string | null>(null);

  const emailError = email.includes("@") ? "" : "Enter a valid email address";
  const passwordError = password.length >= 8 ? "" : "Password must be at least 8 characters";

  if (user) {
    return <p style={{ fontFamily: "sans-serif", color: "#15803d" }}>Welcome, {user}!</p>;
  }
  const field = { display: "block", width: "100%", padding: 8, marginTop: 4, boxSizing: "border-box" as const };
  return (
    <form
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        setSubmitted(true);
        if (!emailError && !passwordError) setUser(email);
      }}
      style={{ fontFamily: "sans-serif", width: 300, padding: 24, border: "1px solid #e5e7eb", borderRadius: 12 }}
    >
      <h2 style={{ marginTop: 0 }}>{title}</h2>
      <label>
        Email
        <input type="email" value={email} onChange={(e) => setEmail(e.target.value)} style={field} />
      </label>
      {submitted && emailError && <p style={{ color: "#dc2626", fontSize: 12 }}>{emailError}</p>}
      <label style={{ display: "block", marginTop: 12 }}>
        Password
        <input type="password" value={password} onChange={(e) => setPassword(e.target.value)} style={field} />
      </label>
      {submitted && passwordError && <p style={{ color: "#dc2626", fontSize: 12 }}>{passwordError}</p>}
      <button type="submit" style={{ marginTop: 16, width: "100%", padding: 10, background: "#111827", color: "white", border: "none", borderRadius: 6 }}>
        Log in
      </button>
    </form>
  );
}
