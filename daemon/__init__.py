"""anima's long-running process: wiring, scheduler, workers, HTTP API, systemd integration, logging, CLI."""
