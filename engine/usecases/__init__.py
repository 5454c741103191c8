"""The request use cases: one function per kind of request, one transaction each, called by the API and the CLI alike.

A route (daemon/api/routes) parses, calls one of these on the DB thread and shapes the result for
the wire; a CLI command does the same for the terminal. The work itself — which switches apply,
what is written, in which transaction — lives here, once:

- turns.record_turn      a chat turn: messages, memories, the used block confirmed, her mood and activity
- context.build_context  what she should keep in mind for the next reply (recall + her state)
- share.offer / receipt  the sharing channel; share.tell_life_event is "she told it" for API and CLI
- state.read_state       how she is, her switches and the counts
- forget.forget_turns    the one deletion, with this process's caches brought in line
- switches.change_switch / reset_switch  a runtime switch, with its one log event
"""
