"""Revisions, one file each, applied in ``down_revision`` order."""
