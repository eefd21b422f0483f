"""The model-file contract: value bins, architecture, inference graph, metadata, mirroring."""
