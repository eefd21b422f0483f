"""Tests of oneply.bot (and the Docker image that runs it)."""
