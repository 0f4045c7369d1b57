"""The command line: `ruler` (`main`: the parser each command module adds its sub-commands
to) and one module per command or group of commands (build, merge, sources, verify, eval with
score, report, compare and published); `ruler release` is `ruler.release` and `ruler export`
is `ruler.eval.integrations.exporters`' registry of exporters."""
