"""Checking a history: the pairing problems, which provider APIs reject each, and where a stored history stands."""
