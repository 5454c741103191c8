"""Talk to her in a terminal through anima's OpenAI-compatible endpoint, with the official openai client, unchanged.

anima composes her system prompt (who she is, how she feels and why, what she remembers of what you just
said, at most one thing from her own day), calls the model configured in config.toml's [model] section,
and records the turn once her reply is complete. This script only keeps the conversation and prints.

    .venv/bin/pip install 'openai>=1.40,<3'
    .venv/bin/python examples/talk.py                           # the quick start's socket ./var/anima.db.sock
    .venv/bin/python examples/talk.py --socket /run/anima/anima.sock
    ANIMA_API_TOKEN=... .venv/bin/python examples/talk.py --url http://127.0.0.1:8765/v1   # loopback TCP
    .venv/bin/python examples/talk.py --companion c41 --token "$HER_TOKEN"   # a directory of companions

Type a line and Enter; an empty line or Ctrl-D ends. --no-stream waits for whole replies.
"""

from __future__ import annotations

import argparse
import os
import sys

import httpx
import openai


def make_client(args: argparse.Namespace) -> openai.OpenAI:
    """The official client over the Unix socket (an httpx transport) or over TCP; the key is anima's token."""
    token = args.token or os.environ.get("ANIMA_API_TOKEN") or "none"  # the socket needs none unless she has one
    if args.url:
        return openai.OpenAI(base_url=args.url, api_key=token)
    base = f"http://anima/v1/companions/{args.companion}" if args.companion else "http://anima/v1"
    transport = httpx.HTTPTransport(uds=args.socket)
    return openai.OpenAI(base_url=base, api_key=token, http_client=httpx.Client(transport=transport, timeout=120))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", default=os.environ.get("ANIMA_SOCKET", "var/anima.db.sock"))
    parser.add_argument("--url", help="http://127.0.0.1:PORT/v1 to use the loopback TCP listener instead")
    parser.add_argument("--companion", help="her handle when the daemon serves a directory (anima run --dir)")
    parser.add_argument("--token", help="bearer token (default: $ANIMA_API_TOKEN)")
    parser.add_argument("--no-stream", action="store_true")
    args = parser.parse_args()
    if not args.url and not os.path.exists(args.socket):
        print(f"talk.py: no socket at {args.socket}; start the daemon (anima run) or pass --socket", file=sys.stderr)
        return 2
    client = make_client(args)
    history: list[dict[str, str]] = []
    while True:
        try:
            line = input("你：").strip()
        except EOFError:
            break
        if not line:
            break
        history.append({"role": "user", "content": line})
        try:
            if args.no_stream:
                reply = client.chat.completions.create(model="anima", messages=history).choices[0].message.content
                print(f"她：{reply}")
            else:
                print("她：", end="", flush=True)
                parts = []
                for chunk in client.chat.completions.create(model="anima", messages=history, stream=True):
                    piece = chunk.choices[0].delta.content if chunk.choices else None
                    if piece:
                        parts.append(piece)
                        print(piece, end="", flush=True)
                print()
                reply = "".join(parts)
        except openai.APIError as exc:  # 502/504: the model server failed; nothing was recorded, try again
            print(f"\n(anima: {exc.message})", file=sys.stderr)
            history.pop()
            continue
        history.append({"role": "assistant", "content": reply or ""})
    return 0


if __name__ == "__main__":
    sys.exit(main())
