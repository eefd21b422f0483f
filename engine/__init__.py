"""oneply engine: tokenizer, move vocabulary, ONNX inference, move policy and UCI front end.

Nothing in this package imports torch: the engine runs on onnxruntime, python-chess and numpy.
"""

__version__ = "0.1.0"
