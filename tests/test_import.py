"""history.jsonl import: all lines or none, errors name the line, user-only and English logs accepted, CLI summary."""

import json
import os
import subprocess
import sys

import pytest

from engine.errors import InputError
from engine.memory.importer import import_history
from tests.memory_helpers import embedder, fresh_db

NOW = 1796083200.0
GOOD = [
    {"ts": "2026-06-01T22:00:00+08:00", "turn_id": "a1", "role": "user", "text": "我搬到了闵行"},
    {"ts": "2026-06-01T22:01:00+08:00", "turn_id": "a1", "role": "companion", "text": "新窗外会有新的树。"},
]


def write(path, lines):
    path.write_bytes(b"\n".join(x if isinstance(x, bytes) else json.dumps(x, ensure_ascii=False).encode() for x in lines))
    return path


@pytest.fixture
def conn(tmp_path):
    return fresh_db(tmp_path / "anima.db")


def messages(conn):
    return conn.execute("SELECT count(*) FROM chat_message").fetchone()[0]


def test_import_writes_all_and_summarises(conn, tmp_path):
    summary = import_history(conn, embedder(), write(tmp_path / "h.jsonl", GOOD), NOW)
    assert summary["turns"] == 1 and summary["messages"] == 2 and summary["new_memories"] == 2
    again = import_history(conn, embedder(), tmp_path / "h.jsonl", NOW)
    assert again["new_memories"] == 0 and messages(conn) == 2


@pytest.mark.parametrize("bad, fragment", [
    (b"{not json", "line 3: not valid JSON"),
    ({"ts": "2026-06-01T22:00:00+08:00", "turn_id": "b", "role": "system", "text": "x"}, "line 3: unknown role"),
    ({"ts": "2026-06-01T22:00:00+08:00", "turn_id": "b", "role": "user"}, "line 3: missing key 'text'"),
    ({"ts": "soon", "turn_id": "b", "role": "user", "text": "x"}, "line 3:"),
    ("我".encode() + b"\xff\xfe", "line 3: not valid UTF-8"),
])
def test_a_bad_line_is_named_and_nothing_is_written(conn, tmp_path, bad, fragment):
    path = write(tmp_path / "bad.jsonl", GOOD + [bad])
    with pytest.raises(InputError, match=fragment):
        import_history(conn, embedder(), path, NOW)
    assert messages(conn) == 0


def test_user_only_and_english_two_speaker_logs(conn, tmp_path):
    lines = [
        {"ts": "2026-05-01T09:00:00Z", "turn_id": "e1", "role": "user", "text": "I adopted a greyhound named Pixel."},
        {"ts": "2026-05-01T09:01:00Z", "turn_id": "e1", "role": "companion", "text": "Pixel is a perfect name."},
        {"ts": "2026-05-02T09:00:00Z", "turn_id": "u2", "role": "user", "text": "Started pottery classes on Tuesdays."},
        {"ts": "2026-05-03T09:00:00Z", "turn_id": 3, "role": "user", "text": "My sister lives in Porto."},
    ]
    summary = import_history(conn, embedder(), write(tmp_path / "en.jsonl", lines), NOW)
    assert summary["turns"] == 3 and summary["messages"] == 4


def test_cli_ingest_prints_progress_and_summary(tmp_path):
    path = write(tmp_path / "h.jsonl", GOOD)
    env = {**os.environ, "ANIMA_CONFIG": os.devnull}
    out = subprocess.run([sys.executable, "-m", "daemon", "--db", str(tmp_path / "cli.db"), "ingest", str(path)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "imported 1 turns, 2 messages" in out.stdout
    assert "embedding [" in out.stderr
    bad = write(tmp_path / "bad.jsonl", GOOD + [b"{"])
    out = subprocess.run([sys.executable, "-m", "daemon", "--db", str(tmp_path / "cli.db"), "ingest", str(bad)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2 and "line 3" in out.stderr


def test_an_openai_style_history_is_read_as_hers(conn, tmp_path):
    """Issue 25: `assistant` (and `content` for `text`) is how OpenAI-style exports say her messages."""
    lines = [{"ts": "2026-06-01T22:00:00+08:00", "turn_id": "o1", "role": "user", "content": "我今天去爬山了"},
             {"ts": "2026-06-01T22:00:05+08:00", "turn_id": "o1", "role": "assistant", "content": "累不累呀"}]
    path = write(tmp_path / "openai.jsonl", lines)
    summary = import_history(conn, embedder(), path, NOW)
    assert summary["messages"] == 2 and summary["new_memories"] == 2
    roles = [r[0] for r in conn.execute("SELECT role FROM chat_message WHERE turn_id = 'o1' ORDER BY role")]
    assert roles == ["companion", "user"]


def test_a_file_ingested_again_embeds_nothing_and_writes_nothing(conn, tmp_path):
    """Issue 25: re-ingesting an imported file re-embedded every message (51.8 s to write nothing)."""
    path = write(tmp_path / "h.jsonl", GOOD)
    import_history(conn, embedder(), path, NOW)

    class Refusing:
        name, dim = embedder().name, embedder().dim

        def embed_passages(self, texts):
            raise AssertionError(f"embedded {len(texts)} known texts again")

    again = import_history(conn, Refusing(), path, NOW)
    assert again["new_memories"] == 0 and again["skipped_existing"] == again["messages"] > 0
