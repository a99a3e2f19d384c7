import { useState } from "react";

type TreeNode = { name: string; children?: TreeNode[] };
type TreeViewProps = { root?: TreeNode };

const DEFAULT_ROOT: TreeNode = {
  name: "src",
  children: [
    { name: "components", children: [{ name: "Button.tsx" }, { name: "Card.tsx" }] },
    { name: "utils", children: [{ name: "format.ts" }] },
    { name: "index.ts" },
  ],
};

function Node({ node, depth }: { node: TreeNode; depth: number }) {
  const [open, setOpen] = useState(depth === 0);
  const isFolder = node.children !== undefined;
  return (
    <li style={{ listStyle: "none" }}>
      <div
        onClick={() => isFolder && setOpen(!open)}
        style={{ paddingLeft: depth * 16, cursor: isFolder ? "pointer" : "default", lineHeight: "26px" }}
      >
        {isFolder ? (open ? "📂" : "📁") : "📄"} {node.name}
      </div>
      {isFolder && open && (
        <ul style={{ padding: 0, margin: 0 }}>
          {node.children?.map((child) => (
            <Node key={child.name} node={child} depth={depth + 1} />
          ))}
        </ul>
      )}
    </li>
  );
}

export default function TreeView({ root = DEFAULT_ROOT }: TreeViewProps) {
  return (
    <ul style={{ fontFamily: "sans-serif", padding: 12, margin: 0, width: 260, background: "#fafaf9", border: "1px solid #e7e5e4" }}>
      <Node node={root} depth={0} />
    </ul>
  );
}
