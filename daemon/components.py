"""The daemon's parts, in start order. Each entry is 'module:factory'; factory(ctx) returns a Component."""

COMPONENTS: list[str] = [
    "daemon.life_component:build",  # first: publishes ctx.persona and resumes her after downtime
    "daemon.memory_component:build",
    "daemon.worker:build",
    "daemon.api.server:build",  # last: every service it calls is up before the first request
]
