"""Tests of oneply.training."""
