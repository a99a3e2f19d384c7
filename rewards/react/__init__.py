"""The react reward service: esbuild syntax + TypeScript type checks of a TSX component (see README.md)."""
