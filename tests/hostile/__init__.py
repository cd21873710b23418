"""Proof under hostile input: fuzzed arguments, oracles, workspace isolation, bad events."""
