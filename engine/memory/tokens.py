"""Text into tokens: FTS5 keyword tokens (jieba words + CJK bigrams + ASCII words) and Jaccard sets for MMR.

FTS5's unicode61 tokenizer would treat a whole run of Chinese characters as one token, so the
text is segmented here and the index stores space-separated tokens. Words (rjieba) give exact
hits; character bigrams catch words jieba splits differently in the query and the memory
(旧书店 / 书店 share 书店); ASCII words keep English usable.
"""

from __future__ import annotations

import importlib.util
import re
import threading
import unicodedata
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path

import numpy as np
import rjieba

# Han ideographs (basic + extension A + compatibility) and kana: the scripts written without spaces.
_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_CJK_CHAR = re.compile(f"[{_CJK}]")
_ASCII_WORD = re.compile(r"[a-z0-9][a-z0-9_']*")
_NOT_ALNUM = re.compile(r"[\W_]+")

# Function words that carry no topic: dropped from queries and from word tokens (bigrams stay).
# A short list on purpose: BM25's idf already discounts common words; these are the ones so common
# in chat that an OR query on them drags in every row.
STOPWORDS = frozenset(
    ["我", "你", "他", "她", "它", "我们", "你们", "他们", "她们", "的", "了", "着", "过", "是", "在", "有", "和", "与", "也", "都", "就", "还", "又", "吗", "呢", "吧", "啊", "呀", "哦", "嗯", "么", "那", "这", "那个", "这个", "什么", "干什么", "干嘛", "什么样", "怎么", "怎样", "哪", "哪里", "哪种", "那只", "这只", "以后", "东西", "一直", "哪儿", "哪个", "谁", "多少", "几", "之前", "以前", "一下", "一个", "一些", "没", "没有", "不", "很", "太", "会", "能", "要", "想", "说", "让", "给", "把", "被", "对", "从", "到", "跟", "为", "为了", "但", "但是", "可是", "而", "所以", "因为", "如果", "现在", "最近", "今天", "自己", "a", "an", "the", "is", "are", "was", "were", "be", "been", "am", "i", "you", "he", "she", "it", "we", "they", "me", "my", "your", "our", "their", "of", "to", "in", "on", "at", "for", "and", "or", "but", "with", "about", "as", "by", "from", "that", "this", "what", "which", "who", "how", "when", "where", "do", "does", "did", "have", "has", "had", "not", "no", "so", "if", "then", "than", "just"]
)


def normalize(text: str) -> str:
    """NFKC (full-width letters and digits to ASCII) and lower case, so query and memory meet.

    Chat-sized texts are cached: one recall normalises each candidate's text three times
    (same_text_key, jaccard_tokens, duplicate_key), and NFKC is ~10 us a line. Long texts are not,
    so the cache stays under ~2 MB whatever the history holds.
    """
    return _normalize_short(text) if len(text) <= NORMALIZE_CACHE_CHARS else _nfkc_lower(text)


NORMALIZE_CACHE_CHARS = 512


def _nfkc_lower(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


_normalize_short = lru_cache(maxsize=1024)(_nfkc_lower)


def is_cjk(ch: str) -> bool:
    return bool(_CJK_CHAR.fullmatch(ch))


@lru_cache(maxsize=4096)
def _words(text: str) -> tuple[str, ...]:
    return tuple(w for w in rjieba.cut(text) if w.strip())


def word_tokens(text: str) -> list[str]:
    """jieba words of the CJK runs plus ASCII words; stopwords and punctuation dropped."""
    text = normalize(text)
    out: list[str] = []
    for run in _CJK_RUN.findall(text):
        out.extend(w for w in _words(run) if w not in STOPWORDS)
    out.extend(w for w in _ASCII_WORD.findall(text) if w not in STOPWORDS)
    return out


def cjk_bigrams(text: str) -> list[str]:
    """Overlapping character pairs inside each CJK run (never across punctuation)."""
    text = normalize(text)
    out: list[str] = []
    for run in _CJK_RUN.findall(text):
        out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out


def fts_tokens(text: str) -> str:
    """The space-separated token string stored in mem_fts for `text`."""
    words = word_tokens(text)
    bigrams = [b for b in cjk_bigrams(text) if b not in words]
    return " ".join(words + bigrams)


def _fts_quote(token: str) -> str:
    return '"' + token.replace('"', "") + '"'


def _query_words_and_bigrams(text: str) -> tuple[list[str], list[str]]:
    """The keyword terms of a query: its non-stopword words, and the bigrams inside words of 3+ characters.

    Bigrams across word boundaries (年在, 备什) are grammar noise in a question; inside a long word
    they let 旧书店 meet 书店 and 日本料理 meet 料理.
    """
    words: dict[str, None] = {}
    bigrams: dict[str, None] = {}
    for word in word_tokens(text):
        if _is_grammar_bigram(word) or (len(word) == 1 and word in _WEAK_CHARS):
            continue
        words.setdefault(word, None)
        if len(word) >= 3 and all(is_cjk(c) for c in word):
            for k in range(len(word) - 1):
                bigrams.setdefault(word[k : k + 2], None)
    return list(words), [b for b in bigrams if b not in words]


def fts_query(text: str, max_terms: int = 64, keep: Callable[[str], bool] | None = None) -> str | None:
    """An FTS5 MATCH expression: the query's terms OR-ed (BM25 ranks by how many and how rare).

    Upstream joins with AND; in Chinese a paraphrase rarely shares every token, so OR with BM25
    ranking is the useful form.
    """
    words, bigrams = _query_words_and_bigrams(text)
    # Order: the query's words, then bigrams, so a cap drops bigrams first.
    ordered = words + bigrams
    terms = [t for t in dict.fromkeys(ordered) if keep is None or keep(t)][:max_terms]
    if not terms:
        return None
    return " OR ".join(_fts_quote(t) for t in terms)


class IdfTable:
    """A read-only word -> IDF table kept as two sorted arrays (str hash, value): ~4 MB, not ~65 MB.

    jieba's table has 270k words; as a dict of str -> float it held ~65 MB of the daemon's RSS (168 ->
    240 MB between two sessions), for the 20-60 lookups a query makes. Only each word's hash is kept
    (Python's str hash: stable within the process, which is all a lookup needs); a query term whose
    64-bit hash equals another word's is the one way to read a wrong value, odds about 270k / 2**64.
    Lookups bisect a C array (~1 us), not a numpy scalar search (~5 us, 40 terms a query).
    """

    def __init__(self, hashes: np.ndarray, values: np.ndarray):
        # The last of repeated words wins, as it did in the dict: unique over the reversed arrays.
        unique, first = np.unique(hashes[::-1], return_index=True)
        self._hashes = array("q", unique.astype(np.int64).tobytes())
        self._values = array("d", np.asarray(values[::-1][first], dtype=np.float64).tobytes())

    @classmethod
    def parse(cls, lines: Iterable[str]) -> IdfTable:
        """From lines of jieba's idf.txt format ("word value"); read line by line, no word string is kept."""
        hashes: array[int] = array("q")
        values: array[float] = array("d")
        for line in lines:
            word, _, value = line.rstrip("\n").partition(" ")
            if value:
                values.append(float(value))
                hashes.append(hash(word))
        return cls(np.frombuffer(hashes, dtype=np.int64), np.frombuffer(values, dtype=np.float64))

    def __len__(self) -> int:
        return len(self._hashes)

    def get(self, word: str, default: float) -> float:
        h = hash(word)
        i = bisect_left(self._hashes, h)
        if i < len(self._hashes) and self._hashes[i] == h:
            return self._values[i]
        return default

    def median(self) -> float:
        return float(np.median(np.frombuffer(self._values, dtype=np.float64))) if self._values else 0.0


def _jieba_idf_path() -> Path:
    """jieba's idf.txt, found without importing jieba: its package import loads HMM tables (~16 MB of
    RSS) that anima never uses (segmentation is rjieba's)."""
    spec = importlib.util.find_spec("jieba")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("jieba is not installed; it ships the general IDF table recall weighs words by")
    return Path(next(iter(spec.submodule_search_locations))) / "analyse" / "idf.txt"


_IDF: dict[str, tuple[IdfTable, float]] = {}
_IDF_LOCK = threading.Lock()


def general_idf() -> tuple[IdfTable, float]:
    """(IDF by word, median IDF) of jieba's general-corpus table (jieba/analyse/idf.txt, MIT).

    A general table, not this user's history: in a history of a few hundred turns, a question word
    such as 第一 or 参加 may occur once and get a high corpus IDF; in a large general corpus it is
    common (5.2, 5.1) against a name or a rare word (高铁 9.6, 玄凤 unknown = rare). Read once, ~0.3 s
    idle (1-2 s on a loaded VM), under a lock: a reply arriving while the daemon's warm thread reads it
    waits for that read instead of parsing the file a second time on the DB thread.
    """
    found = _IDF.get("jieba")
    if found is None:
        with _IDF_LOCK:
            if "jieba" not in _IDF:
                with _jieba_idf_path().open("r", encoding="utf-8") as lines:
                    table = IdfTable.parse(lines)
                _IDF["jieba"] = (table, table.median())
            found = _IDF["jieba"]
    return found


def term_idf(term: str) -> float:
    """General IDF of a term; a word the table does not know (a name, slang, a model number) counts as rare.

    jieba's own keyword extractor gives unknown words the median IDF; that is the rule here too.
    """
    table, median = general_idf()
    return table.get(term, median)


def query_term_weights(text: str, idf_floor: float) -> dict[str, float]:
    """Weight of each keyword term of a query: max(0, IDF - idf_floor); a bigram inside a word counts half.

    Subtracting a floor makes the commonest words (IDF under the floor: 我 人 什么 今天 第一 参加)
    weigh nothing at all, so the words of a question cannot decide which memory it finds.
    """
    words, bigrams = _query_words_and_bigrams(text)
    out: dict[str, float] = {}
    for term in words:
        w = term_idf(term) - idf_floor
        if w > 0:
            out[term] = w
    for term in bigrams:
        w = 0.5 * (term_idf(term) - idf_floor)
        if w > 0 and term not in out:
            out[term] = w
    return out


@lru_cache(maxsize=65536)
def doc_terms(text: str) -> frozenset[str]:
    """The terms a memory can match: its words (stopwords kept out) and all its CJK bigrams."""
    return frozenset(word_tokens(text)) | frozenset(cjk_bigrams(text))


# A bigram made only of these characters is grammar, not topic (我的, 了吗, 是不).
_BIGRAM_STOP_CHARS = frozenset("我你他她它的了着过是在有和也都就还又吗呢吧啊呀哦嗯么那这个什不没很太会能要想说让给把被对从到跟为但而所以因如果之")


# Single characters too vague to search on by themselves (verbs of motion, degree, measure words).
_WEAK_CHARS = frozenset("最上下去来做只小叫干过个种次点些样儿嘛")


def _is_grammar_bigram(token: str) -> bool:
    return len(token) == 2 and token[0] in _BIGRAM_STOP_CHARS and token[1] in _BIGRAM_STOP_CHARS


def same_text_key(text: str) -> str:
    """The normalised text: NFKC, lower case, letters, digits and CJK only (punctuation and spaces dropped)."""
    return _NOT_ALNUM.sub("", normalize(text))  # [^\W_] is exactly str.isalnum (test_tokens)


@lru_cache(maxsize=65536)
def duplicate_key(text: str) -> str:
    """What makes two memories the same statement: their content characters and ASCII words, in any order.

    NFKC, lower case, punctuation and function characters (的 了 是 又 都 ...) dropped, order
    ignored: "又买了糖炒栗子，这次是好的" and "糖炒栗子这次买的都是好的" say one thing; "年会的时间是…"
    and "年会的持续时间是两天" share a template but not their content, and stay two.
    """
    text = normalize(text)
    chars = set(_CJK_CHAR.findall(text)) - _BIGRAM_STOP_CHARS
    words = set(_ASCII_WORD.findall(text)) - STOPWORDS
    return "".join(sorted(chars)) + "|" + " ".join(sorted(words))


def jaccard_tokens(text: str) -> frozenset[str]:
    """CJK characters + CJK bigrams + ASCII words: the token set MMR compares with Jaccard.

    Upstream tokenizes on letter runs, which makes a whole Chinese sentence one token (Jaccard 0 or
    1); characters and bigrams give a graded overlap for near-duplicate turns.
    """
    text = normalize(text)
    tokens: set[str] = set(_ASCII_WORD.findall(text))
    for run in _CJK_RUN.findall(text):
        tokens.update(run)
        tokens.update(run[i : i + 2] for i in range(len(run) - 1))
    return frozenset(tokens)


def text_cost(text: str) -> float:
    """CJK-aware length for the context budget: a CJK character costs 1, anything else 0.5.

    A Chinese character carries about as much as two or three Latin letters (and costs about one
    model token), so an English memory gets about twice the characters of a Chinese one.
    """
    cjk = sum(1 for ch in text if ord(ch) > 0x2E7F)
    return cjk + 0.5 * (len(text) - cjk)
