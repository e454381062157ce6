"""Entrypoints the master runs inside trial processes (``python -m trialkit.exec.harness``)."""
