"""``engram setup``: find the coding agents installed, show what wiring Engram into each one
changes (MCP registration, lifecycle hooks), apply it with a backup of every file, and undo
only what it added; ``engram service`` (a per-user unit) and ``engram doctor`` live here too.

One module per concept: :mod:`.files` (backups, atomic writes), :mod:`.formats` (merging into
JSON and TOML), :mod:`.agents` (detection and each agent's files), :mod:`.plan` (what changes),
:mod:`.unit` (systemd / launchd), :mod:`.model` (the embedding model), :mod:`.doctor`.
"""
