"""The UCI front end: `oneply uci` (engine.py) and its command parsing (parsing.py)."""
