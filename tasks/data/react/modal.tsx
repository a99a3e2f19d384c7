import { useState } from "react";

type ModalProps = { title?: string; message?: string };

export default function Modal({ title = "Delete file?", message = "This action cannot be undone." }: ModalProps) {
  const [open, setOpen] = useState(false);
  return (
    <div style={{ fontFamily: "sans-serif", padding: 16 }}>
      <button onClick={() => setOpen(true)} style={{ padding: "8px 16px" }}>
        Open dialog
      </button>
      {open && (
        <div
          onClick={() => setOpen(false)}
          style={{ position: "fixed", inset: 0, background: "rgba(0,0,0,0.5)", display: "flex", alignItems: "center", justifyContent: "center" }}
        >
          <div
            role="dialog"
            aria-modal="true"
            aria-labelledby="modal-title"
            onClick={(e) => e.stopPropagation()}
            style={{ background: "white", borderRadius: 10, padding: 24, width: 320, boxShadow: "0 10px 30px rgba(0,0,0,0.3)" }}
          >
            <h2 id="modal-title" style={{ marginTop: 0 }}>
              {title}
            </h2>
            <p>{message}</p>
            <div style={{ textAlign: "right" }}>
              <button onClick={() => setOpen(false)}>Close</button>
            </div>
          </div>
        </div>
      )}
    </div>
  );
}
