"""Checkpoint housekeeping: garbage collection and deletion, where a trial may register a
checkpoint, and registering what trials journaled while the master was away."""
