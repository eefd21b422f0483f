"""Fitting: config, batches, data feed, the loop, checkpoints, validation, evaluation, soups."""
