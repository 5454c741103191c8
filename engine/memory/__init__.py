"""Memory: ingest of turns, hybrid recall with the OpenClaw memory-core ranking rules, re-read and context."""
