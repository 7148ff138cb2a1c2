"""The item model, pure: the state machine, the Structs, cards, todos and their ticks,
canonical URLs, content sniffing (and the READY gate, until the steps have a package
of their own)."""
