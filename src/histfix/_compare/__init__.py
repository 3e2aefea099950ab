"""What another pydantic-ai release does with a history: its cached environment and the probe run there.

Shared by ``histfix compare`` (one history, every release) and the store's upgrade check
(``histfix scan --against``, every history of a store); rendering stays with the CLI.
"""
