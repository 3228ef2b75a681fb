"""served_prompts.py on its own: a record answers only its workspace, its sampled ids and its unprefilled
rendering; the store stays within its token budget, least recently used out first."""

from __future__ import annotations

from rollbook_engine.served_prompts import ServedPrompts


def test_a_record_answers_only_the_same_turn():
    s = ServedPrompts()
    s.record("ws_a", [5, 6, 7], [1, 2, 3], [1, 2, 3, 9])
    assert s.fed_prompt("ws_a", [5, 6, 7], [1, 2, 3]) == [1, 2, 3, 9]
    assert s.fed_prompt("ws_b", [5, 6, 7], [1, 2, 3]) is None  # another workspace
    assert s.fed_prompt(None, [5, 6, 7], [1, 2, 3]) is None
    assert s.fed_prompt("ws_a", [5, 6], [1, 2, 3]) is None  # other sampled ids
    assert s.fed_prompt("ws_a", [5, 6, 7], [1, 2, 4]) is None  # other messages, same short reply


def test_two_conversations_that_sampled_the_same_reply_each_keep_their_prompt():
    s = ServedPrompts()
    s.record("ws", [42, 2], [1], [1, 9])
    s.record("ws", [42, 2], [3, 4], [3, 4, 9, 9])
    s.record("ws", [42, 2], [3, 4], [3, 4, 9, 9])  # the same turn again: held once
    assert s.fed_prompt("ws", [42, 2], [1]) == [1, 9]
    assert s.fed_prompt("ws", [42, 2], [3, 4]) == [3, 4, 9, 9]
    assert s.held_tokens == 3 + 6


def test_the_store_stays_within_its_budget_least_recently_used_out_first():
    s = ServedPrompts(max_tokens=30)
    for i in range(5):  # 10 tokens each
        s.record("ws", [100 + i], [i] * 4, [i] * 6)
        if i >= 1:
            assert s.fed_prompt("ws", [100], [0] * 4) == [0] * 6  # used again: kept
    assert s.held_tokens <= 30
    assert s.fed_prompt("ws", [100], [0] * 4) == [0] * 6
    assert s.fed_prompt("ws", [104], [4] * 4) == [4] * 6
    assert s.fed_prompt("ws", [101], [1] * 4) is None  # the oldest unused went first
    s.record("ws", [200], [0] * 40, [0] * 41)  # one record beyond the whole budget is not kept
    assert s.fed_prompt("ws", [200], [0] * 40) is None and s.held_tokens <= 30
