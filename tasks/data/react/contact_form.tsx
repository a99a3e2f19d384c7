import { useState } from "react";

type ContactFormProps = { subjects?: string[] };
type Fields = { name: string; email: string; subject: string; message: string };

export default function ContactForm({ subjects = ["General", "Billing", "Support"] }: ContactFormProps) {
  const [fields, setFields] = useState<Fields>({ name: "", email: "", subject: subjects[0] ?? "", message: "" });
  const [errors, setErrors] = useState<string[]>([]);
  const [sent, setSent] = useState(false);
  const set = (key: keyof Fields, value: string) => setFields({ ...fields, [key]: value });

  const submit = () => {
    const problems: string[] = [];
    if (!fields.name.trim()) problems.push("Name is required");
    if (!fields.email.includes("@")) problems.push("Email must contain @");
    if (fields.message.trim().length < 10) problems.push("Message needs at least 10 characters");
    setErrors(problems);
    setSent(problems.length === 0);
  };

  if (sent) {
    return (
      <div style={{ fontFamily: "sans-serif", padding: 16, background: "#ecfdf5", borderRadius: 8 }}>
        Thanks {fields.name}! We will reply to {fields.email} about “{fields.subject}”.
      </div>
    );
  }
  const input = { display: "block", width: "100%", boxSizing: "border-box" as const, padding: 6, marginBottom: 10 };
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        submit();
      }}
      style={{ fontFamily: "sans-serif", width: 340, padding: 20, border: "1px solid #d1d5db", borderRadius: 10 }}
    >
      <h3 style={{ marginTop: 0 }}>Contact us</h3>
      <input placeholder="Name" value={fields.name} onChange={(e) => set("name", e.target.value)} style={input} />
      <input placeholder="Email" value={fields.email} onChange={(e) => set("email", e.target.value)} style={input} />
      <select value={fields.subject} onChange={(e) => set("subject", e.target.value)} style={input}>
        {subjects.map((s) => (
          <option key={s}>{s}</option>
        ))}
      </select>
      <textarea placeholder="Message" rows={4} value={fields.message} onChange={(e) => set("message", e.target.value)} style={input} />
      {errors.length > 0 && (
        <ul style={{ color: "#b91c1c", fontSize: 13 }}>
          {errors.map((err) => (
            <li key={err}>{err}</li>
          ))}
        </ul>
      )}
      <button type="submit">Send</button>
    </form>
  );
}
