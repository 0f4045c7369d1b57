"""The command line: `ruler` (`main`: the parser each command module adds its sub-commands
to) and one module per command or group of commands (docs/architecture.md, "Layout")."""
