"""The PyTorch model, its export to a model file, the import of DeepMind's checkpoints."""
