"""oneply as a Lichess BOT: `oneply bot [--config config.yml]` (see bot/main.py)."""
