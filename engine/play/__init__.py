"""Playing: inference, the policy over it (search, book, fallback), the clock, analyse, bench."""
