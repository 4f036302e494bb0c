"""Label selectors as apimachinery reads them; merge patches as RFC 7386 builds them."""

from __future__ import annotations

from mochaos.model.dict_helpers import merge_diff, rand_string, selector_matches


def test_nil_selector_matches_nothing_empty_matches_everything() -> None:
    assert not selector_matches(None, {"a": "1"})
    assert selector_matches({}, {"a": "1"})


def test_match_labels_and_expressions_are_anded() -> None:
    sel = {
        "matchLabels": {"a": "1"},
        "matchExpressions": [
            {"key": "b", "operator": "In", "values": ["x", "y"]},
            {"key": "c", "operator": "NotIn", "values": ["z"]},
            {"key": "d", "operator": "Exists"},
            {"key": "e", "operator": "DoesNotExist"},
        ],
    }
    good = {"a": "1", "b": "x", "d": ""}
    assert selector_matches(sel, good)
    assert selector_matches(sel, {**good, "c": "other"})
    assert not selector_matches(sel, {**good, "a": "2"})
    assert not selector_matches(sel, {**good, "b": "q"})
    assert not selector_matches(sel, {**good, "c": "z"})
    assert not selector_matches(sel, {"a": "1", "b": "x"})
    assert not selector_matches(sel, {**good, "e": "1"})


def test_merge_diff_sets_removes_and_keeps_lists_atomic() -> None:
    before = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"l": [1, 2], "k": "v"}}
    after = {"metadata": {"labels": {"a": "1", "c": "3"}}, "spec": {"l": [1], "k": "v"}}
    assert merge_diff(before, after) == {
        "metadata": {"labels": {"b": None, "c": "3"}},
        "spec": {"l": [1]},
    }


def test_merge_diff_of_equal_objects_is_empty() -> None:
    obj = {"a": {"b": [1]}, "c": 1}
    assert merge_diff(obj, {"a": {"b": [1]}, "c": 1}) == {}


def test_rand_string_uses_apimachinery_alphabet() -> None:
    s = rand_string(200)
    assert len(s) == 200
    assert set(s) <= set("bcdfghjklmnpqrstvwxz2456789")
