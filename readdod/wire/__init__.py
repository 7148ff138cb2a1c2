"""What goes out, pure: wire views of the store's rows, JSON Schemas of the Structs."""
