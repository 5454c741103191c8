"""The daemon's parts, in start order. Each entry is 'module:factory'; factory(ctx) returns a Component."""

COMPONENTS: list[str] = [
]
