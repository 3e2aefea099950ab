"""The default repair: pairing calls and results, the walks that close and merge, the report of changes, notes for orphans."""
