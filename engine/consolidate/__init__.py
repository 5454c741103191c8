"""Consolidation: episodes become bitemporal facts through a rule gate, lineage keys, an operator, a validator and one apply."""
