"""Experiments and their search: turning a submitted config into the stored one, warm starts, and
the driver that feeds each search method its events and carries out its operations."""
