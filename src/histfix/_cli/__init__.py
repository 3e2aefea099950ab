"""The command line: the commands, their file I/O and rendering, the store commands, and ``compare``'s tables."""
