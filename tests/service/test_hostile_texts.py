"""The contamination route reads text as the CLI does, as a person reads it: a character that
renders as nothing (a control character, a format character, a variation selector) inside a
word of a holdout question does not hide it."""

from __future__ import annotations

import pytest

from tests.cli.test_hostile_files import CONTROLS, INVISIBLE
from tests.service.conftest import auth


def test_a_character_that_renders_as_nothing_cannot_hide_a_holdout_question(client):
    texts = [f"Q: Where does Al{c}ice work?" for c in CONTROLS + INVISIBLE]
    result = client.post("/contamination/check", json={"texts": texts}, headers=auth("bob")).json()
    found = {h["text_index"] for h in result["hits"] if h["kind"] == "question-exact" and h["holdout_item"] == "mini/mini-01"}
    assert [f"U+{ord(c):04X}" for i, c in enumerate(CONTROLS + INVISIBLE) if i not in found] == []


@pytest.mark.parametrize("text", ["Al\nice works", "Where does Al ice work?"])
def test_a_line_break_or_a_space_still_parts_words(client, text):
    result = client.post("/contamination/check", json={"texts": [text]}, headers=auth("bob")).json()
    assert result["clean"], result
