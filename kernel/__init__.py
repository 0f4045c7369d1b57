"""The kernel: what every area shares and none of it knows of building or evaluating (layer 0;
docs/architecture.md, "Layout", names the modules)."""
