"""A general Chinese lexical resource: synonyms, and the class a word's dictionary definition puts it in.

It bridges a category question to an instance ("哪种药我碰不得" / 青霉素, "学的什么乐器" / 架子鼓): the
class of a word is the genus of its dictionary definition ("鼓：打击乐器" -> 乐器; "鹦鹉：鸟名" -> 鸟), a
compound inherits its head's (Chinese compounds are head-final: 架子鼓 -> 鼓 -> 乐器), and synonym lines
add near words. Nothing here is written from an evaluation set; the data files are derived by
engine/memory/lexicon_build.py from two published, Apache-2.0 sources (credited in NOTICE):

- data/lexicon_classes.tsv: word -> idf and classes, from JioNLP 1.5.31's word dictionary (33,988 words with
  definitions), character dictionary (17,578 characters) and idf table (github.com/dongrixinyu/JioNLP);
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
    """The loaded resource: word -> classes (weighted), class -> members, synonym lines, idf."""

    classes: dict[str, dict[str, float]]
    members: dict[str, dict[str, float]]
    lines: tuple[tuple[str, ...], ...]
    lines_of: dict[str, tuple[int, ...]]
    idf: dict[str, float]


def _data(name: str) -> str:
    return (resources.files("engine.memory") / "data" / name).read_text(encoding="utf-8")


def _parse_classes(text: str) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    classes: dict[str, dict[str, float]] = {}
    idf: dict[str, float] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        try:
            word, idf_text, found = line.split("\t")
            if idf_text:
                idf[word] = float(idf_text)
            if found:
                classes[word] = {name: float(w) for name, _, w in (p.rpartition(":") for p in found.split(","))}
        except ValueError:
            raise ConfigError(f"lexicon_classes.tsv line {number}: expected word<TAB>idf<TAB>class:weight,..., "
                              "rebuild it with python -m engine.memory.lexicon_build") from None
    return classes, idf


@lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """The resource, loaded and validated on first use and kept for the life of the process."""
    classes, idf = _parse_classes(_data("lexicon_classes.tsv"))
    members: dict[str, dict[str, float]] = defaultdict(dict)
    for word, found in classes.items():
        for name, weight in found.items():
            members[name][word] = weight
    lines = tuple(tuple(line.split()) for line in _data("lexicon_synonyms.txt").splitlines()
                  if line and not line.startswith("#"))
    lines_of: dict[str, list[int]] = defaultdict(list)
    for index, terms in enumerate(lines):
        for term in terms:
            lines_of[term].append(index)
    return Lexicon(classes, dict(members), lines, {k: tuple(v) for k, v in lines_of.items()}, idf)


def synonyms(word: str) -> frozenset[str]:
    """The other terms of every synonym line `word` is on; empty for an unknown word."""
    if not isinstance(word, str):
        return frozenset()
    lex = lexicon()
    return frozenset(t for i in lex.lines_of.get(word, ()) for t in lex.lines[i] if t != word)


def hypernyms(word: str) -> dict[str, float]:
    """The classes `word` belongs to, by weight (鹦鹉 -> 鸟, 架子鼓 -> 鼓, 乐器); {} for an unknown word.
    A word the dictionaries do not define takes its synonyms' classes, at a discount, one hop only."""
    if not isinstance(word, str):
        return {}
    lex = lexicon()
    found = dict(lex.classes.get(word, {}))
    if not found:
        for near in synonyms(word):
            for name, weight in lex.classes.get(near, {}).items():
                if name != word:
                    found[name] = max(found.get(name, 0.0), round(weight * 0.6, 3))
    return found


def _category_forms(word: str) -> list[str]:
    """A category word and its plain form: 虫子 -> 虫 (the noun suffixes 子 / 儿 carry no meaning)."""
    forms = [word]
    if len(word) >= 2 and word[-1] in "子儿":
        forms.append(word[:-1])
    return forms


@lru_cache(maxsize=4096)
def _classes_for(form: str) -> tuple[str, ...]:
    """The class names a category word stands for: itself, and for a one-character category the
    two-character classes built on it (虫 -> 昆虫 / 害虫, 鸟 -> 鸟类, 药 -> 药物 / 药品)."""
    names = lexicon().members
    if len(form) >= 2:
        return (form,) if form in names else ()
    return tuple(sorted(n for n in names if n == form or (len(n) == 2 and form in n)))


def hyponyms(category: str) -> dict[str, float]:
    """Words whose class is `category` (鸟 -> 鹦鹉, 乐器 -> 鼓 / 小提琴 / 架子鼓), by weight; {} if none."""
    if not isinstance(category, str) or not category:
        return {}
    lex = lexicon()
    found: dict[str, float] = {}
    for form in _category_forms(category):
        for name in _classes_for(form):
            factor = 1.0 if name == form else 0.8  # a class built on the category counts a little less
            for member, weight in lex.members.get(name, {}).items():
                if member != category:
                    found[member] = max(found.get(member, 0.0), round(weight * factor, 3))
    return found


def related(word: str) -> frozenset[str]:
    """Synonyms, classes and members of `word`: every word that may stand for it in a memory."""
    if not isinstance(word, str) or not word:
        return frozenset()
    return frozenset(synonyms(word) | set(hypernyms(word)) | set(hyponyms(word))) - {word}


def expand(words: Iterable[str], limit: int) -> dict[str, float]:
    """The `limit` best expansion terms for a query's words, term -> weight in (0, 1]: synonyms (0.8),
    members of a category (0.9 x their class weight), classes (0.5 x weight). Ties rank the more common
    term first (idf), then by text, so the result is deterministic. The words themselves are left out."""
    if not isinstance(limit, int) or limit <= 0:
        return {}
    lex = lexicon()
    given = [w for w in words if isinstance(w, str) and w]
    out: dict[str, float] = {}

    def add(term: str, weight: float) -> None:
        out[term] = max(out.get(term, 0.0), round(weight, 4))

    for word in given:
        for near in synonyms(word):
            add(near, 0.8)
        for member, weight in hyponyms(word).items():
            add(member, weight * 0.9)
        for name, weight in hypernyms(word).items():
            add(name, weight * 0.5)
    for word in given:
        out.pop(word, None)
    ranked = sorted(out.items(), key=lambda kv: (-kv[1], lex.idf.get(kv[0], _UNKNOWN_IDF), kv[0]))
    return dict(ranked[:limit])
