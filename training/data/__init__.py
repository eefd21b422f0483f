"""Training data: positions, Stockfish scoring workers, shards and the dataset reading them."""
