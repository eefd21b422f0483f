"""Tests of oneply.engine (and the `oneply` command line, packaging and README it owns)."""
