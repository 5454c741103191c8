"""The one form of a fact's statement: its date, who said it and the source sentence; and the sentence back out.

Consolidation writes every statement in this form (engine/consolidate), and forgetting a turn finds
the statements whose sentence came from it (engine/memory/forget.py): both read it here, so memory
needs nothing of consolidation.
"""

from __future__ import annotations


def statement_for(subject: str, date: str, text: str) -> str:
    """The host writes every statement from the evidence: the date and the source sentence, nothing else."""
    speaker = "用户说" if subject == "user" else "她讲过自己的经历"
    return f"{date} {speaker}：{' '.join(text.split())}"


def sentence_of(statement: str) -> str:
    """The source sentence of a statement (the whole text when it has no speaker part)."""
    _, _, sentence = statement.partition("：")
    return sentence or statement
