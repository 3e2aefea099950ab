"""The foundations every layer shares: change and problem records, part predicates, the synthesized marker, input checks."""
