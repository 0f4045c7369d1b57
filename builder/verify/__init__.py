"""`ruler verify`, one module per concern (docs/architecture.md, "Layout"): folder and
manifest checks, then each file's rows in a process pool (`run`), then loading.
"""
