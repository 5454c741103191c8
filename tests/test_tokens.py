"""Tokens: FTS tokens mix jieba words, CJK bigrams and ASCII words; queries drop grammar; Jaccard sets are graded."""

from engine.memory.tokens import fts_query, fts_tokens, intent_terms, jaccard_tokens, text_cost


def test_fts_tokens_have_words_bigrams_and_ascii():
    tokens = fts_tokens("今天在旧书店淘到一本蓝色封面的诗集 with Blue cover").split()
    assert "旧书店" in tokens and "书店" in tokens and "诗集" in tokens
    assert "blue" in tokens and "cover" in tokens
    assert "，" not in tokens


def test_bigrams_never_cross_punctuation():
    tokens = fts_tokens("好的，栗子").split()
    assert "的栗" not in tokens


def test_query_drops_grammar_and_keeps_topic():
    query = fts_query("我弟弟今年在准备什么")
    assert query is not None
    assert '"弟弟"' in query and '"准备"' in query
    assert '"什么"' not in query and '"年在"' not in query


def test_query_of_only_function_words_is_none():
    assert fts_query("我的什么") is None


def test_fullwidth_and_case_are_normalised():
    assert "abc" in fts_tokens("ＡＢＣ").split()


def test_intent_terms_bridge_a_question_to_its_answer_words():
    assert "护士" in intent_terms("我是干什么的")
    assert intent_terms("今天天气") == []


def test_jaccard_tokens_grade_near_duplicates():
    from engine.memory.ranking import jaccard

    a = jaccard_tokens("又买了糖炒栗子，这次是好的")
    b = jaccard_tokens("糖炒栗子这次买的都是好的")
    c = jaccard_tokens("给它取名叫海雾，放在床头第二层")
    assert jaccard(a, b) > 0.5 > jaccard(a, c)


def test_text_cost_counts_cjk_double():
    assert text_cost("你好") == 2
    assert text_cost("ab") == 1
