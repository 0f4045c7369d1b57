"""`ruler report` and `ruler compare`: one run's report (`run`: the frame, with each benchmark's
hooks), its intervals, score by depth and figures, runs pooled (`replicates`), runs of several
models (`table3`) and beside published results (`reference`), and two runs compared
(`compare`)."""
