"""A general Chinese lexical resource: synonyms, and the class a word's dictionary definition puts it in.

It bridges a category question to an instance ("哪种药我碰不得" / 青霉素, "学的什么乐器" / 架子鼓): the
class of a word is the genus of its dictionary definition ("鼓：打击乐器" -> 乐器; "鹦鹉：鸟名" -> 鸟), a
compound inherits its head's (Chinese compounds are head-final: 架子鼓 -> 鼓 -> 乐器), and synonym lines
add near words. Nothing here is written from an evaluation set; the data files are derived by
engine/memory/lexicon_build.py from two published, Apache-2.0 sources (credited in NOTICE):

- data/lexicon_classes.tsv (word -> idf and classes) and data/lexicon_members.tsv (category -> its 200 best
  members, subclasses included), from JioNLP 1.5.31's word dictionary (33,988 words with definitions),
  character dictionary (17,578 characters) and idf table (github.com/dongrixinyu/JioNLP);
- data/lexicon_synonyms.txt: 24,592 synonym lines of 2-12 Chinese terms from Chinese-Synonyms 1.2.0's
  sim_words.txt (the `cnsyn` package, github.com/shangfr/Chinese-Synonyms).

What it covers: the common vocabulary of a printed dictionary (animals, plants, instruments, diseases,
tools, sports); not brand names, slang or new words (卫龙, 辣条, 小强, 吉他 has no class). Loaded lazily
once per process (bench/timeq_cost.py measures load time and RSS); every lookup is a dict access.
Unknown words give empty results, never an error.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from engine.errors import ConfigError

_UNKNOWN_IDF = 12.0  # a word missing from the idf table is taken as rare


@dataclass(frozen=True)
class Lexicon:
    """The loaded resource, rows kept as text and parsed on lookup (a third of the memory, a quarter of
    the load time of parsing 64k rows up front)."""

    rows: dict[str, str]  # word -> "idf<TAB>class:weight,..."
    member_rows: dict[str, str]  # category -> "member:weight,..." (the 200 best, subclasses' included)
    lines: tuple[str, ...]
    lines_of: dict[str, tuple[int, ...]]


def _data(name: str) -> str:
    return (resources.files("engine.memory") / "data" / name).read_text(encoding="utf-8")


def _pairs(text: str, where: str) -> dict[str, float]:
    try:
        return {name: float(w) for name, _, w in (p.rpartition(":") for p in text.split(","))} if text else {}
    except ValueError:
        raise ConfigError(f"{where}: expected name:weight,..., got {text[:40]!r}; "
                          "rebuild it with python -m engine.memory.lexicon_build") from None


def _rows(text: str, where: str) -> dict[str, str]:
    rows: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if line and not line.startswith("#"):
            key, tab, rest = line.partition("\t")
            if not tab:
                raise ConfigError(f"{where} line {number}: no tab; rebuild it with python -m engine.memory.lexicon_build")
            rows[key] = rest
    return rows


@lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """The resource, loaded on first use and kept for the life of the process."""
    rows = _rows(_data("lexicon_classes.tsv"), "lexicon_classes.tsv")
    member_rows = _rows(_data("lexicon_members.tsv"), "lexicon_members.tsv")
    lines = tuple(line for line in _data("lexicon_synonyms.txt").splitlines() if line and not line.startswith("#"))
    lines_of: dict[str, list[int]] = defaultdict(list)
    for index, line in enumerate(lines):
        for term in line.split():
            lines_of[term].append(index)
    return Lexicon(rows, member_rows, lines, {k: tuple(v) for k, v in lines_of.items()})


@lru_cache(maxsize=65536)
def _classes_of(word: str) -> dict[str, float]:
    row = lexicon().rows.get(word)
    return _pairs(row.partition("\t")[2], "lexicon_classes.tsv") if row else {}


@lru_cache(maxsize=8192)
def _members_of(name: str) -> dict[str, float]:
    return _pairs(lexicon().member_rows.get(name, ""), "lexicon_members.tsv")


def idf(word: str) -> float:
    """jionlp's idf of `word` (lower is more common); 12.0 for a word it does not list."""
    row = lexicon().rows.get(word) if isinstance(word, str) else None
    value = row.partition("\t")[0] if row else ""
    return float(value) if value else _UNKNOWN_IDF


def synonyms(word: str) -> frozenset[str]:
    """The other terms of every synonym line `word` is on; empty for an unknown word."""
    if not isinstance(word, str):
        return frozenset()
    lex = lexicon()
    return frozenset(t for i in lex.lines_of.get(word, ()) for t in lex.lines[i].split() if t != word)


def hypernyms(word: str) -> dict[str, float]:
    """The classes `word` belongs to, by weight (鹦鹉 -> 鸟, 架子鼓 -> 鼓, 乐器); {} for an unknown word.
    A word the dictionaries do not define takes its synonyms' classes, at a discount, one hop only."""
    if not isinstance(word, str):
        return {}
    found = dict(_classes_of(word))
    if not found:
        for near in sorted(synonyms(word)):
            for name, weight in _classes_of(near).items():
                if name != word:
                    found[name] = max(found.get(name, 0.0), round(weight * 0.6, 3))
    return found


def _category_forms(word: str) -> list[str]:
    """A category word and its plain form: 虫子 -> 虫 (the noun suffixes 子 / 儿 carry no meaning)."""
    forms = [word]
    if len(word) >= 2 and word[-1] in "子儿":
        forms.append(word[:-1])
    return forms


@lru_cache(maxsize=16384)
def _hyponyms(category: str) -> tuple[tuple[str, float], ...]:
    """The members of a category and of its plain form (虫子 -> 虫), best first (precomputed by the builder,
    subclasses included)."""
    forms = _category_forms(category)
    if len(forms) == 1:
        return tuple((m, w) for m, w in _members_of(category).items() if m != category)
    found: dict[str, float] = {}
    for form in forms:
        for member, weight in _members_of(form).items():
            if member != category:
                found[member] = max(found.get(member, 0.0), weight)
    return tuple(sorted(found.items(), key=lambda kv: (-kv[1], idf(kv[0]), kv[0])))


def hyponyms(category: str) -> dict[str, float]:
    """Words whose class is `category` or one of its subclasses (鸟 -> 鹦鹉, 乐器 -> 鼓 / 小提琴 / 提琴),
    the best first (at most 200 a form); {} if none."""
    if not isinstance(category, str) or not category:
        return {}
    return dict(_hyponyms(category))


def related(word: str) -> frozenset[str]:
    """Synonyms, classes and members of `word`: every word that may stand for it in a memory."""
    if not isinstance(word, str) or not word:
        return frozenset()
    return frozenset(synonyms(word) | set(hypernyms(word)) | set(hyponyms(word))) - {word}


@lru_cache(maxsize=16384)
def _expansion(word: str, limit: int) -> tuple[tuple[float, float, str], ...]:
    """One word's `limit` best expansion terms as sort keys (-weight, idf, term), cached: queries
    repeat words, and a ready key makes merging a plain tuple sort."""
    out: dict[str, float] = {}

    def add(term: str, weight: float) -> None:
        out[term] = max(out.get(term, 0.0), round(weight, 4))

    for near in synonyms(word):
        add(near, 0.8)
    for member, weight in _hyponyms(word)[: limit * 2]:
        add(member, weight * 0.9)
    for name, weight in hypernyms(word).items():
        add(name, weight * 0.5)
    out.pop(word, None)
    return tuple(sorted((-weight, idf(term), term) for term, weight in out.items())[:limit])


def expand(words: Iterable[str], limit: int) -> dict[str, float]:
    """The `limit` best expansion terms for a query's words, term -> weight in (0, 1]: synonyms (0.8),
    members of a category (0.9 x their class weight), classes (0.5 x weight). Ties rank the more common
    term first (idf), then by text, so the result is deterministic. The words themselves are left out."""
    if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
        return {}
    given = {w for w in words if isinstance(w, str) and w}
    best: dict[str, tuple[float, float, str]] = {}
    for word in given:
        for key in _expansion(word, limit):
            term = key[2]
            if term not in given and (term not in best or key < best[term]):
                best[term] = key
    return {term: -weight for weight, _, term in sorted(best.values())[:limit]}
