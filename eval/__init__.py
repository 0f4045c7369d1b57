"""The evaluator: `ruler eval` (generate), `ruler score`, `ruler report`, `ruler compare`
(their command modules are in `ruler.commands`). docs/architecture.md ("Layout") lists its
modules and sub-packages, one job each.
"""
