"""oneply training: positions, Stockfish annotation, the PyTorch model, fitting, export, eval.

Only the modules that define or fit the model import torch (install the `train` extra).
"""
