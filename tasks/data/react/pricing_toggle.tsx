import { useState } from "react";

type Plan = { name: string; monthly: number; features: string[] };
type PricingTableProps = { plans?: Plan[] };

const DEFAULT_PLANS: Plan[] = [
  { name: "Starter", monthly: 9, features: ["1 project", "Email support"] },
  { name: "Pro", monthly: 29, features: ["10 projects", "Priority support", "Analytics"] },
  { name: "Team", monthly: 79, features: ["Unlimited projects", "SSO", "Audit log"] },
];

export default function PricingTable({ plans = DEFAULT_PLANS }: PricingTableProps) {
  const [yearly, setYearly] = useState(false);
  return (
    <div style={{ fontFamily: "sans-serif", textAlign: "center" }}>
      <div style={{ marginBottom: 16 }}>
        <button onClick={() => setYearly(false)} style={{ fontWeight: yearly ? 400 : 700 }}>
          Monthly
        </button>
        <button onClick={() => setYearly(true)} style={{ fontWeight: yearly ? 700 : 400, marginLeft: 4 }}>
          Yearly (2 months free)
        </button>
      </div>
      <div style={{ display: "flex", gap: 12, justifyContent: "center" }}>
        {plans.map((plan) => (
          <div key={plan.name} style={{ width: 160, padding: 16, border: "1px solid #d4d4d8", borderRadius: 12, background: plan.name === "Pro" ? "#f5f3ff" : "white" }}>
            <h3 style={{ margin: 0 }}>{plan.name}</h3>
            <p style={{ fontSize: 28, fontWeight: 800, margin: "8px 0" }}>
              ${yearly ? plan.monthly * 10 : plan.monthly}
              <span style={{ fontSize: 13, fontWeight: 400 }}>/{yearly ? "yr" : "mo"}</span>
            </p>
            <ul style={{ textAlign: "left", paddingLeft: 18, fontSize: 13 }}>
              {plan.features.map((f) => (
                <li key={f}>{f}</li>
              ))}
            </ul>
          </div>
        ))}
      </div>
    </div>
  );
}
