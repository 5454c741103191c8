"""The local HTTP API for the chat front end: aiohttp on a Unix socket (and optional loopback TCP) inside the daemon."""
