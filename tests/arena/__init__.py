"""Tests of oneply.arena."""
