"""Tokens: FTS tokens mix jieba words, CJK bigrams and ASCII words; queries drop grammar; Jaccard sets are graded."""

from engine.memory.tokens import fts_query, fts_tokens, jaccard_tokens, text_cost


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


def test_jaccard_tokens_grade_near_duplicates():
    from engine.memory.ranking import jaccard

    a = jaccard_tokens("又买了糖炒栗子，这次是好的")
    b = jaccard_tokens("糖炒栗子这次买的都是好的")
    c = jaccard_tokens("给它取名叫海雾，放在床头第二层")
    assert jaccard(a, b) > 0.5 > jaccard(a, c)


def test_text_cost_counts_cjk_double():
    assert text_cost("你好") == 2
    assert text_cost("ab") == 1


def test_question_words_weigh_little_against_names_and_rare_words():
    from engine.memory.tokens import query_term_weights

    w = query_term_weights("我第一次参加的那个高铁旅行团叫啥", 4.0)
    assert "我" not in w and "什么" not in w
    assert w["高铁"] > 3 * w.get("参加", 0.0)
    assert w["高铁"] > 3 * w.get("第一次", 0.0)
    unknown = query_term_weights("苏晴", 4.0)  # a name the general table does not know counts as rare
    assert unknown["苏晴"] > 5


def test_doc_terms_hold_words_and_bigrams():
    from engine.memory.tokens import doc_terms

    terms = doc_terms("回重庆的高铁")
    assert {"重庆", "高铁", "庆的"} <= terms


def test_duplicate_key_is_the_content_not_the_template():
    from engine.memory.tokens import duplicate_key

    assert duplicate_key("又买了糖炒栗子，这次是好的") == duplicate_key("糖炒栗子这次买的都是好的")
    assert duplicate_key("糖炒栗子这次没坏") != duplicate_key("糖炒栗子这次买的都是好的")
    assert duplicate_key("公司年会的时间是十二月二十号") != duplicate_key("公司年会的持续时间是两天")
    assert duplicate_key("ＯＫ，好的") == duplicate_key("ok 好的")
