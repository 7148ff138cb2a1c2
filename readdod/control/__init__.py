"""The control plane: JSON-RPC 2.0 over a Unix socket (DESIGN §6)."""
