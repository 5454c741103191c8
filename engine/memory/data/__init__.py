"""Data files of the memory part (query intents), loaded with importlib.resources."""
