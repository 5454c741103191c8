"""Build the lexicon's data files (engine/memory/data/lexicon_*) from JioNLP's dictionaries and cnsyn's list.

Run by hand when either source is upgraded, never at run time:
    pip install 'jionlp>=1.5.31,<1.6' 'cnsyn>=1.2,<1.3'
    python -m engine.memory.lexicon_build            # or --check: exit 1 if the shipped files are stale
Both packages are Apache-2.0; the derived files ship with anima (see NOTICE), so the daemon needs neither
package (cnsyn alone would pull scikit-learn, scipy and Whoosh for a 1.6 MB text file) and never imports
jionlp (0.8 s and ~35 MB). The files are read from the installed packages without importing them.

How a class is read (the genus of a definition, the classical "differentia + genus" reading):
- the gloss forms that name a class outright: "抗生素的旧称" -> 抗生素, "鸟名" -> 鸟, "抗菌素的一种" -> 抗菌素, "……之一", "……的统称";
- else the head of the definition's first clause, its longest dictionary-word suffix of two or more
  characters ("擦弦类弦鸣乐器" -> 乐器, "肉制品" -> 制品);
- the genus's own head ("打击乐器" -> 乐器) and genus (one hop: 青霉素 -> 抗菌素 -> 药物), and for a compound of three or more characters its head
  word and that word's genus (Chinese compounds are head-final: 架子鼓 -> 鼓 -> 打击乐器 -> 乐器).
One-character classes come only from the gloss forms and compound heads: as a clause suffix a single
character is noise (子, 人, 方, 体 ...).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import tempfile
import zipfile
from pathlib import Path

_HAN = re.compile(r"[\u4e00-\u9fff]+")
_NAMED_CLASS = re.compile(r"([\u4e00-\u9fff]{1,4}?)(?:名|的一种|之一|的统称)(?=[。，,；;、\s]|$)")
# "X的旧称" / "X的俗称": the word is another name of X and takes X's place as its genus.
_ALIAS_OF = re.compile(r"^([\u4e00-\u9fff]{1,6}?)的(?:旧称|俗称|简称|别称|通称|略称|省称|古称|别名)")
_FIRST_SENSE = re.compile(r"^\s*(?:\[[^\]]*\])?\s*(?:1[.．、])?\s*(.*?)(?:\s*2[.．、]|$)", re.S)
_CLAUSE_END = re.compile(r"[，,。；;：:（(﹐、]")
# Words that end a definition's first clause without being its genus.
_NOT_A_CLASS = frozenset(["一种", "一类", "种类", "东西", "事物", "统称", "通称", "俗称", "简称", "总称", "之一",
                          "名", "的", "等", "类", "者", "物"])
_MAX_CLUSTER = 12  # a synonym line longer than this is a topic list (六十四卦 ...), not synonyms
_MAX_MEMBERS = 200  # a class with more members (地方, 动物) is too broad to expand a query by all of them
_UNKNOWN_IDF = 12.0  # a word missing from the idf table is taken as rare
_DATA = Path(__file__).parent / "data"


def package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)  # locates the package without running its __init__
    if spec is None or spec.origin is None:
        raise SystemExit(f"lexicon_build needs the {name!r} package: pip install 'jionlp>=1.5.31,<1.6' 'cnsyn>=1.2,<1.3'")
    return Path(spec.origin).parent


def _read_zip(path: Path, member: str) -> str:
    with zipfile.ZipFile(path) as archive:
        return archive.read(member).decode("utf-8")


def first_clause(definition: str) -> str:
    """The first clause of the first sense: where a definition names its genus."""
    match = _FIRST_SENSE.match(definition)
    sense = match.group(1) if match else definition
    return _CLAUSE_END.split(sense, maxsplit=1)[0][:40]


def longest_suffix(text: str, vocab: dict[str, str], proper: bool, min_len: int) -> str | None:
    """The longest dictionary word of at least `min_len` characters that `text` ends with."""
    for start in range(1 if proper else 0, len(text) - min_len + 1):
        if text[start:] in vocab:
            return text[start:]
    return None


def genus(word: str, clause: str, vocab: dict[str, str]) -> tuple[str, float] | None:
    """The class a definition clause names, with a weight: gloss form 1.0, clause head 0.9."""
    alias = _ALIAS_OF.match(clause)
    if alias and alias.group(1) != word:
        return alias.group(1), 1.0
    named = _NAMED_CLASS.search(clause)
    if named and named.group(1) != word and named.group(1) not in _NOT_A_CLASS:
        return named.group(1), 1.0
    clause = clause.rstrip("的等")
    head = longest_suffix(clause, vocab, proper=False, min_len=2)
    if head is None and 2 <= len(clause) <= 4 and _HAN.fullmatch(clause):
        head = clause  # a definition that is one noun ("蚊子：昆虫。") names its genus even if undefined
    if head and head != word and head not in _NOT_A_CLASS:
        return head, 0.9
    return None


def build_tables(char_dict: str, word_dict: str, idf_text: str, sim_words: str) -> tuple[dict[str, dict[str, float]], list[tuple[str, ...]], dict[str, float]]:
    """word -> classes, synonym clusters, and the idf of every word the tables mention."""
    clauses: dict[str, str] = {}
    for line in char_dict.splitlines():
        fields = line.split("\t")
        if len(fields) >= 8 and len(fields[0]) == 1:
            clauses[fields[0]] = first_clause(fields[7])
    for line in word_dict.splitlines():
        word, _, definition = line.partition("\t")
        if word and definition and _HAN.fullmatch(word):
            clauses[word] = first_clause(definition)
    genera = {w: g for w, c in clauses.items() if (g := genus(w, c, clauses))}

    clusters: list[tuple[str, ...]] = []
    in_cluster: set[str] = set()
    for line in sim_words.splitlines():
        terms = tuple(dict.fromkeys(t for t in line.split() if _HAN.fullmatch(t)))
        if 2 <= len(terms) <= _MAX_CLUSTER:
            clusters.append(terms)
            in_cluster.update(terms)

    classes: dict[str, dict[str, float]] = {}
    for word in sorted(set(clauses) | in_cluster):
        found: dict[str, float] = {}

        def add(name: str, weight: float, found: dict[str, float] = found, word: str = word) -> None:
            if name != word:
                found[name] = round(max(found.get(name, 0.0), weight), 3)

        direct = genera.get(word)
        if direct:
            add(*direct)
            chain = longest_suffix(direct[0], clauses, proper=True, min_len=2)
            if chain:
                add(chain, direct[1] * 0.8)
        head = longest_suffix(word, clauses, proper=True, min_len=1 if len(word) >= 3 else 2)
        if head:
            add(head, 0.8)
            inherited = genera.get(head)
            if inherited:
                add(inherited[0], inherited[1] * 0.8)
                chain = longest_suffix(inherited[0], clauses, proper=True, min_len=2)
                if chain:
                    add(chain, inherited[1] * 0.64)
        for name, weight in list(found.items()):  # one more hop up: 青霉素 -> 抗菌素 -> 药物
            above = genera.get(name)
            if above:
                add(above[0], weight * above[1] * 0.7)
        if found:
            classes[word] = found

    mentioned = set(classes) | in_cluster | {n for found in classes.values() for n in found}
    idf: dict[str, float] = {}
    for line in idf_text.splitlines():
        word, _, value = line.partition("\t")
        if word in mentioned:
            try:
                idf[word] = round(float(value), 2)
            except ValueError:
                continue
    return classes, clusters, idf


def category_members(classes: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """category -> its members: the words of that class, and at 0.8 the words of its subclasses: a class
    ending in it (head-final: 打击乐器 is a kind of 乐器) or, for a one-character category, a two-character
    class built on it (虫 -> 昆虫 / 害虫, 药 -> 药物)."""
    direct: dict[str, dict[str, float]] = {}
    for word, found in classes.items():
        for name, weight in found.items():
            direct.setdefault(name, {})[word] = weight
    members: dict[str, dict[str, float]] = {name: dict(words) for name, words in direct.items()}
    for name, words in direct.items():
        above = {name[cut:] for cut in range(1, len(name) - 1)}  # 打击乐器 -> 击乐器, 乐器
        if len(name) == 2:
            above |= set(name)  # 昆虫 -> 昆, 虫
        for category in above - {name}:
            merged = members.setdefault(category, {})
            for word, weight in words.items():
                if word != category:
                    merged[word] = max(merged.get(word, 0.0), round(weight * 0.8, 3))
    return members


def write(classes: dict[str, dict[str, float]], clusters: list[tuple[str, ...]], idf: dict[str, float], out: Path) -> None:
    header = ("# Derived from JioNLP 1.5.31's chinese_word_dictionary, chinese_char_dictionary and idf tables\n"
              "# (Apache-2.0, github.com/dongrixinyu/JioNLP) by engine/memory/lexicon_build.py; see NOTICE.\n")
    words = sorted(set(classes) | set(idf))
    with (out / "lexicon_classes.tsv").open("w", encoding="utf-8") as fh:
        fh.write(header + "# word<TAB>idf (blank if unknown)<TAB>class:weight,class:weight ...\n")
        for word in words:
            row = ",".join(f"{n}:{w:g}" for n, w in sorted(classes.get(word, {}).items(), key=lambda kv: (-kv[1], kv[0])))
            fh.write(f"{word}\t{idf.get(word, '')}\t{row}\n")
    members = category_members(classes)
    with (out / "lexicon_members.tsv").open("w", encoding="utf-8") as fh:
        fh.write(header + f"# category<TAB>member:weight,... (the {_MAX_MEMBERS} best: weight, then the more common word)\n")
        for name in sorted(members):
            ranked = sorted(members[name].items(), key=lambda kv: (-kv[1], idf.get(kv[0], _UNKNOWN_IDF), kv[0]))
            fh.write(name + "\t" + ",".join(f"{m}:{w:g}" for m, w in ranked[:_MAX_MEMBERS]) + "\n")
    with (out / "lexicon_synonyms.txt").open("w", encoding="utf-8") as fh:
        fh.write("# Chinese terms of Chinese-Synonyms 1.2.0's sim_words.txt (Apache-2.0, github.com/shangfr/Chinese-Synonyms),\n"
                 f"# lines of 2-{_MAX_CLUSTER} terms, by engine/memory/lexicon_build.py; see NOTICE. One synonym line per line.\n")
        for terms in clusters:
            fh.write(" ".join(terms) + "\n")


_FILES = ("lexicon_classes.tsv", "lexicon_members.tsv", "lexicon_synonyms.txt")


def main(argv: list[str] | None = None) -> int:
    """Write the data files into engine/memory/data (or the folder given); with --check, build into a
    temporary folder and exit 1 if the shipped files differ from what the installed packages give."""
    args = list(argv or [])
    if "--check" in args:
        with tempfile.TemporaryDirectory() as folder:
            main([folder])
            differ = [n for n in _FILES if (Path(folder) / n).read_bytes() != (_DATA / n).read_bytes()]
        print(json.dumps({"differ": differ}))
        return 1 if differ else 0
    out = Path(args[0]) if args else _DATA
    jio = package_dir("jionlp") / "dictionary"
    classes, clusters, idf = build_tables(
        _read_zip(jio / "chinese_char_dictionary.zip", "chinese_char_dictionary.txt"),
        _read_zip(jio / "chinese_word_dictionary.zip", "chinese_word_dictionary.txt"),
        _read_zip(jio / "idf.zip", "idf.txt"),
        (package_dir("cnsyn") / "chinese_dictionary" / "sim_words.txt").read_text(encoding="utf-8"),
    )
    write(classes, clusters, idf, out)
    print(json.dumps({"words_with_classes": len(classes), "classes": len({n for f in classes.values() for n in f}),
                      "synonym_lines": len(clusters), "idf_words": len(idf)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
