"""What the installed pydantic-ai release is and does: its version, the switches, detection, probes, the backend rule."""
