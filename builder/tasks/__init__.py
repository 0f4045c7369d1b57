"""`ruler.builder.tasks` moved to `ruler.catalog` (the catalog and benchmark API); the modules
of it that plug-ins import stay importable here (docs/extending.md, "Moved modules")."""
