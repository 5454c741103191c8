"""The compact general-IDF table reads every jieba word as the dict it replaced did, and costs a few MB, not ~65."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from engine.memory import tokens
from engine.memory.tokens import IdfTable, general_idf, same_text_key

REPO = Path(__file__).resolve().parents[1]


def test_every_word_of_jiebas_table_reads_its_value_and_the_median_is_the_dicts() -> None:
    reference: dict[str, float] = {}
    for line in tokens._jieba_idf_path().read_text(encoding="utf-8").splitlines():
        word, _, value = line.partition(" ")
        if value:
            reference[word] = float(value)
    table, median = general_idf()
    assert len(table) == len(reference) > 200_000
    assert [w for w, v in reference.items() if table.get(w, -1.0) != v] == []
    assert median == statistics.median(reference.values())
    assert table.get("玄凤鹦鹉和它的不存在的词", median) == median  # unknown words count as rare (the median)


def test_a_repeated_word_keeps_its_last_value_as_a_dict_would() -> None:
    table = IdfTable.parse(["甲 1.0\n", "乙 2.0\n", "甲 3.0\n", "no-value-line\n"])
    assert len(table) == 2
    assert (table.get("甲", 0.0), table.get("乙", 0.0), table.get("丙", -1.0)) == (3.0, 2.0, -1.0)


def test_loading_the_table_neither_imports_jieba_nor_keeps_tens_of_mb() -> None:
    """jieba's package import alone loads ~16 MB of HMM tables; the old dict held ~65 MB more."""
    script = (
        "import os, sys\n"
        "def rss():\n"
        "    return int(next(l for l in open(f'/proc/{os.getpid()}/status') if l.startswith('VmRSS')).split()[1]) / 1024\n"
        "from engine.memory import tokens\n"
        "tokens.word_tokens('今天去了趟超市')\n"
        "before = rss()\n"
        "tokens.general_idf()\n"
        "print(rss() - before, 'jieba' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, env={**os.environ}, capture_output=True, text=True,
                         check=True, timeout=60).stdout.split()
    grew_mb, imported = float(out[0]), out[1] == "True"
    assert not imported
    assert grew_mb < 30, f"loading the IDF table grew RSS by {grew_mb:.1f} MB"


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_same_text_key_keeps_exactly_the_characters_isalnum_keeps(text: str) -> None:
    assert same_text_key(text) == "".join(ch for ch in tokens.normalize(text) if ch.isalnum())

