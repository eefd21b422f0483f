"""What the model reads of a position: state tokens, move ids and the facts (Python, C core)."""
