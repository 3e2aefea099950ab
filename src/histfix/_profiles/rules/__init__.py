"""The profile rules, one module per family of what a provider API rejects."""
