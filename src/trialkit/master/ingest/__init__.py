"""Metric ingest: the group commit that stores trials' metric batches in one writer thread."""
