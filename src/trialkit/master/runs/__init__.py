"""Trial processes: the process table and its slots, the per-trial supervisor program, what a run
is started with, its working copy, log capture, and the local and Ray resource pools."""
