"""Serving requests: the tool endpoints, the search and parallel lanes, replies and spill,
cancellation and deadlines, and the operator endpoints."""
