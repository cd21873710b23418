"""Benchmarks: each prints ratios against floors measured in the same run.

Run from the repository root, e.g. ``.venv/bin/python -m bench.store --sessions 200``.
Results go to ``bench/out/`` (gitignored). Every run is bounded and loopback only.
"""
