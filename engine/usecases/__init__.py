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
- chat.prepare_chat / finish_chat  the chat endpoint's two transactions around the model's reply
- life.told_events       the life she has told (the only life text a public read carries)
- tokens.issue_token / revoke / token_digests  her API token (`anima token`, the API's check)
- untold.*               what the privacy projection reads of her untold life
- files.*                her file as a command opens it (for writing, read-only, new), its lock
- inspect.*              what `anima status` and `anima doctor` read (nothing written)
- backstory.*            the operator's timeline, mood trace and backstory events (`anima life`, `anima mood`)
- simulate.run_life      a simulated run of her life (`anima simulate`)
- oplog.note_cli_write   a CLI write noted for the daemon's log (ids and counts)

The CLI and the API import no engine.store: they reach her file only through these
(tests/test_layering.py).
"""
