"""Provider profiles: the targets, the rule type, the ordered registry, the runner, and the rules each API enforces."""
