"""The lexical resource: classes from dictionary definitions, compound heads, synonym lines; and its builder."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import ConfigError
from engine.memory import lexicon as lx
from engine.memory.lexicon_build import build_tables, category_members


def test_a_defined_word_has_the_class_its_definition_names() -> None:
    assert "鸟" in lx.hypernyms("鹦鹉")  # 鸟名。
    assert "乐器" in lx.hypernyms("小提琴")  # ……弦鸣乐器
    assert "昆虫" in lx.hypernyms("蚊子")  # 昆虫。


def test_a_compound_takes_the_class_of_its_head() -> None:
    drums = lx.hypernyms("架子鼓")  # not in the dictionary: 鼓 is, and 鼓 is an 打击乐器
    assert "鼓" in drums and "乐器" in drums


def test_a_category_finds_its_members() -> None:
    assert "鹦鹉" in lx.hyponyms("鸟")
    assert {"小提琴", "鼓"} <= set(lx.hyponyms("乐器"))
    assert "蚊子" in lx.hyponyms("虫子")  # 虫子 -> 虫 -> 昆虫 -> 蚊子


def test_synonym_lines_are_symmetric() -> None:
    assert "芒果" in lx.synonyms("杧果") and "杧果" in lx.synonyms("芒果")


def test_a_category_reaches_the_members_of_its_subclasses() -> None:
    # 提琴 is defined as "某些乐器……": a class ending in 乐器 is a kind of 乐器 (head-final), so 提琴 is
    # an 乐器 though no definition says so directly
    assert "乐器" not in lx.hypernyms("提琴")
    assert "提琴" in lx.hyponyms("乐器")


def test_idf_orders_common_words_first() -> None:
    assert lx.idf("鸟") < lx.idf("鹦鹉") < lx.idf("xyzzy") == 12.0


def test_related_joins_synonyms_classes_and_members_without_the_word() -> None:
    near = lx.related("鸟")
    assert "鹦鹉" in near and "鸟" not in near


@pytest.mark.parametrize("word", ["", "xyzzy", "卫龙", "😀", "鸟" * 50, None, 3])
def test_unknown_words_give_empty_results(word: object) -> None:
    assert lx.related(word) == frozenset()  # type: ignore[arg-type]
    assert lx.hypernyms(word) == {}  # type: ignore[arg-type]
    assert lx.expand([word], 10) == {}  # type: ignore[list-item]


def test_expand_is_bounded_weighted_and_deterministic() -> None:
    first = lx.expand(["鸟", "乐器"], 20)
    assert len(first) == 20
    assert all(0 < w <= 1 for w in first.values())
    assert "鸟" not in first and "乐器" not in first
    assert list(first.items()) == list(lx.expand(["乐器", "鸟"], 20).items())  # input order does not matter
    weights = list(first.values())
    assert weights == sorted(weights, reverse=True)
    assert lx.expand(["鸟"], 0) == {}


def test_a_damaged_data_file_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="lexicon_build"):
        lx._pairs("鸟:many", "lexicon_classes.tsv")
    with pytest.raises(ConfigError, match="line 2"):
        lx._rows("# header\nno tab here\n", "lexicon_members.tsv")


def test_builder_reads_genus_gloss_forms_heads_and_aliases() -> None:
    chars = "\n".join([
        "鼓\t鼓\t1\t1\tx\t鼓\tx\t[gǔ]1.打击乐器，多为圆筒形。2.形状像鼓的。",
        "虫\t虫\t0\t1\tx\t虫\tx\t[chóng]1.昆虫的通称。",
    ])
    words = "\n".join([
        "乐器\t能发乐音、供演奏音乐使用的器具。",
        "打击乐器\t以打击方式发音的乐器。",
        "鹦鹉\t1.鸟名。头圆，上嘴大。",
        "抗菌素\t抗生素的旧称。",
        "抗生素\t某些微生物所产生的化学物质。",
        "物质\t独立存在于人的意识之外的客观实在。",
    ])
    classes, lines, idf = build_tables(chars, words, "鹦鹉\t9.4\n乐器\t8.0\n", "鹦鹉 鹦哥\n架子鼓 爵士鼓\n")
    assert classes["鹦鹉"]["鸟"] == 1.0  # gloss form 鸟名
    assert "乐器" in classes["鼓"]  # the head of the clause, then its own head 乐器
    assert {"鼓", "乐器"} <= set(classes["架子鼓"])  # a word only on a synonym line: its head's classes
    assert classes["抗菌素"]["抗生素"] == 1.0 and "物质" in classes["抗菌素"]  # alias, then one hop up
    assert lines == [("鹦鹉", "鹦哥"), ("架子鼓", "爵士鼓")]
    members = category_members(classes)
    assert "鹦鹉" in members["鸟"] and "鼓" in members["乐器"]
    assert members["物"]["抗生素"] == pytest.approx(0.8 * classes["抗生素"]["物质"])  # 物质 is built on 物
    assert idf == {"鹦鹉": 9.4, "乐器": 8.0}


@settings(deadline=None, max_examples=100)
@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=6), max_size=6),
       st.integers(min_value=-5, max_value=200))
def test_random_words_never_raise(words: list[str], limit: int) -> None:
    out = lx.expand(words, limit)
    assert len(out) <= max(limit, 0)
    for word in words:
        lx.related(word)

