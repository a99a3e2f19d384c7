"""botgrpo reward services: each runs as its own process and speaks protocol v1 (PROTOCOL.md)."""
