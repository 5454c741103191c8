"""anima's domain: pure functions for her inner life and memory, and the one place that stores them."""
