"""Read an OpenAI Chat Completions request: the conversation, stream or not, and what may be passed upstream.

Unknown fields are tolerated, as OpenAI's server tolerates fields a newer client sends; what anima cannot
honour honestly is refused with a 400 naming the field: tools and function calling (her reply must be text
she says, so it can be recorded and appraised), images and audio parts, and n > 1 (one reply is one turn).
A user message must end the conversation: her reply answers it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.errors import InputError

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
REFUSED_FIELDS = {
    "tools": "tools and function calling are not supported: her reply is text she says",
    "functions": "function calling is not supported: her reply is text she says",
    "tool_choice": "tools and function calling are not supported: her reply is text she says",
    "function_call": "function calling is not supported: her reply is text she says",
    "audio": "audio output is not supported",
}
# Sampling fields the client may set and anima passes on as they are ([model] max_tokens/temperature win).
PASSED_FIELDS = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "presence_penalty",
                 "frequency_penalty", "seed")
MAX_MESSAGES = 500


class ChatInputError(InputError):
    """A request anima refuses; `param` names the offending field, as OpenAI's error shape does."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class ChatMessage:
    role: str  # system, developer, user, assistant (tool messages are refused)
    content: str


@dataclass(frozen=True)
class ChatRequest:
    messages: tuple[ChatMessage, ...]
    stream: bool
    model: str | None  # what the client asked for: answered back, not forwarded ([model] name is)
    user: str | None  # OpenAI's end-user id: part of the conversation's identity
    passed: dict[str, Any]  # sampling fields forwarded upstream
    include_usage: bool = False  # stream_options.include_usage

    @property
    def last_user(self) -> str:
        return self.messages[-1].content

    def client_system(self) -> list[ChatMessage]:
        """The system (or developer) messages the client sent: kept after hers, in their order."""
        return [m for m in self.messages if m.role in ("system", "developer")]

    def dialogue(self) -> list[ChatMessage]:
        """The conversation itself (user and assistant turns), oldest first."""
        return [m for m in self.messages if m.role in ("user", "assistant")]


def _text_of(content: Any, where: str) -> str:
    """A message's text: a string, or a list of text parts joined (OpenAI's array form); other parts refused."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        texts = []
        for i, part in enumerate(content):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise ChatInputError(f"{where}[{i}] must be a content part object with a type", f"{where}[{i}]")
            if part["type"] != "text":
                raise ChatInputError(f"{where}[{i}] is a {part['type'][:40]!r} part; only text parts are supported "
                                     "(no images, audio or files)", f"{where}[{i}]")
            if not isinstance(part.get("text"), str):
                raise ChatInputError(f"{where}[{i}].text must be a string", f"{where}[{i}].text")
            texts.append(part["text"])
        return "\n".join(texts)
    raise ChatInputError(f"{where} must be a string or a list of text parts", where)


def parse_request(body: Any) -> ChatRequest:
    """The request as anima serves it, or ChatInputError (400) naming the field and what to send instead."""
    if not isinstance(body, dict):
        raise ChatInputError("the request body must be a JSON object (an OpenAI Chat Completions request)")
    for name, why in REFUSED_FIELDS.items():
        if body.get(name) not in (None, [], "none"):
            raise ChatInputError(f"{name}: {why}", name)
    n = body.get("n", 1)
    if n not in (None, 1):
        raise ChatInputError("n: only one reply per request is supported (n = 1)", "n")
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise ChatInputError("messages must be a non-empty list of {role, content} objects", "messages")
    if len(raw) > MAX_MESSAGES:
        raise ChatInputError(f"messages holds {len(raw)} messages, over the limit of {MAX_MESSAGES}; "
                             "send the recent conversation", "messages")
    messages = []
    for i, item in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(item, dict):
            raise ChatInputError(f"{where} must be an object with role and content", where)
        role = item.get("role")
        if role not in ROLES:
            raise ChatInputError(f"{where}.role must be one of system, developer, user, assistant; got "
                                 f"{str(role)[:40]!r}", f"{where}.role")
        if role in ("tool", "function") or item.get("tool_calls") or item.get("function_call"):
            raise ChatInputError(f"{where}: tool and function messages are not supported", where)
        messages.append(ChatMessage(role, _text_of(item.get("content"), f"{where}.content")))
    if messages[-1].role != "user" or not messages[-1].content.strip():
        raise ChatInputError("the last message must be the user's, with text: her reply answers it", "messages")
    stream = body.get("stream", False)
    if not isinstance(stream, bool | None):
        raise ChatInputError("stream must be true or false", "stream")
    model = body.get("model")
    user = body.get("user")
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    passed = {k: body[k] for k in PASSED_FIELDS if body.get(k) is not None}
    return ChatRequest(tuple(messages), bool(stream), model if isinstance(model, str) else None,
                       user if isinstance(user, str) else None, passed, include_usage)
