"""``memvault add/search/list/get/delete/clear`` against real SQLite stores and the real model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memvault.api.requests import SearchBody

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")

# (content, type) of a small but realistic agent memory; each query below paraphrases one of
# them without sharing its key words.
MEMORIES = [
    ("The user is allergic to peanuts and shellfish.", "semantic"),
    ("Production deploys happen every Tuesday right after the standup meeting.", "procedural"),
    ("Alice prefers to be contacted on Slack rather than by email.", "social"),
    ("The staging database is PostgreSQL 16 listening on port 5433.", "semantic"),
    ("Last Saturday the user went hiking in the Alps with two friends.", "episodic"),
    ("To rotate the API key, open Settings, then Security, and click Regenerate.", "procedural"),
]

SEARCH_JSON_KEYS = {
    "id",
    "agent_id",
    "category",
    "content",
    "tags",
    "metadata",
    "created_at",
    "relevance_score",
}


@pytest.fixture
def seeded(run, db) -> dict[str, str]:
    """The six memories of agent ``u`` (content -> id)."""
    return {
        content: run.add(db, content, "--agent", "u", "--type", kind) for content, kind in MEMORIES
    }


# -- add -----------------------------------------------------------------------------------------


def test_add_prints_only_the_new_id_and_stores_the_memory(run, db) -> None:
    result = run(
        "--db", db, "add", "Prefers dark mode in every editor", "--tag", "ui", "--tag", "pref"
    )
    assert result.code == 0
    assert result.err == ""
    new_id = result.out.strip()
    assert result.out == new_id + "\n"
    assert UUID_RE.match(new_id)
    [entry] = run.list(db)
    assert entry["id"] == new_id
    assert entry["content"] == "Prefers dark mode in every editor"
    assert entry["agent_id"] == "default"
    assert entry["category"] == "semantic"
    assert entry["tags"] == ["ui", "pref"]


def test_add_json_prints_an_object_with_the_id(run, db) -> None:
    result = run("--db", db, "add", "Uses fish as the login shell", "--json")
    assert result.code == 0
    new_id = result.json()["id"]
    assert UUID_RE.match(new_id)
    assert [e["id"] for e in run.list(db)] == [new_id]


def test_ids_of_successive_adds_are_distinct(run, db) -> None:
    ids = [run.add(db, f"fact number {i}") for i in range(3)]
    assert len(set(ids)) == 3
    assert sorted(e["id"] for e in run.list(db)) == sorted(ids)


def test_add_created_at_with_offset_is_stored_in_utc(run, db) -> None:
    new_id = run.add(db, "Met Bob at the conference", "--created-at", "2024-05-01T12:00:00+02:00")
    got = run("--db", db, "get", new_id, "--json").json()
    assert got["created_at"] == "2024-05-01T10:00:00+00:00"


def test_add_created_at_without_offset_is_taken_as_utc(run, db) -> None:
    new_id = run.add(db, "Flight landed late", "--created-at", "2024-05-01T12:00:00")
    got = run("--db", db, "get", new_id, "--json").json()
    assert got["created_at"] == "2024-05-01T12:00:00+00:00"


def test_content_of_exactly_the_maximum_length_is_accepted(run, db) -> None:
    content = "x" * 31_999 + "y"
    new_id = run.add(db, content)
    assert run("--db", db, "get", new_id, "--json").json()["content"] == content


def test_config_file_limits_content_length(run, db, tmp_path: Path) -> None:
    cfg = tmp_path / "small.yaml"
    cfg.write_text("memory:\n  options:\n    max_content_chars: 20\n", encoding="utf-8")
    ok = run("--config", str(cfg), "--db", db, "add", "x" * 20)
    assert ok.code == 0, ok.err
    # Longer content is kept whole, as linked chunks within the configured limit.
    longer = run("--config", str(cfg), "--db", db, "add", "alpha beta gamma delta epsilon")
    assert longer.code == 0, longer.err
    stored = run.list(db)
    assert len(stored) > 2
    assert all(len(m["content"]) <= 20 for m in stored)


# -- search --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("which foods could give them a bad reaction?", MEMORIES[0][0]),
        ("when do we ship releases to prod?", MEMORIES[1][0]),
        ("how do I reach Alice", MEMORIES[2][0]),
        ("mountain trip at the weekend", MEMORIES[4][0]),
        ("how to get a new secret token", MEMORIES[5][0]),
    ],
)
def test_search_json_ranks_the_paraphrased_memory_first(run, db, seeded, query, expected) -> None:
    result = run("--db", db, "search", query, "--agent", "u", "--json")
    assert result.code == 0, result.err
    hits = result.json()
    assert isinstance(hits, list)
    assert len(hits) == len(MEMORIES)
    for hit in hits:
        assert hit.keys() >= SEARCH_JSON_KEYS
        assert hit["agent_id"] == "u"
        assert isinstance(hit["tags"], list)
        assert isinstance(hit["metadata"], dict)
    assert hits[0]["content"] == expected
    assert hits[0]["id"] == seeded[expected]
    scores = [h["relevance_score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] > scores[1]


def test_search_limit_and_type_filter(run, db, seeded) -> None:
    result = run("--db", db, "search", "how do we do things", "-a", "u", "--limit", "2", "--json")
    assert len(result.json()) == 2
    procedural = run(
        "--db", db, "search", "how do we do things", "-a", "u", "--type", "procedural", "--json"
    ).json()
    assert {h["category"] for h in procedural} == {"procedural"}
    assert len(procedural) == 2


def test_search_limit_is_the_rest_limit(run, db, seeded) -> None:
    # The command builds SearchBody, so its --limit allows exactly what POST /v1/search does.
    top = SearchBody.model_json_schema()["properties"]["limit"]["maximum"]
    assert top == 100
    ok = run("--db", db, "search", "how do we do things", "-a", "u", "--limit", str(top), "--json")
    assert ok.code == 0, ok.err
    assert len(ok.json()) == len(seeded)
    over = run("--db", db, "search", "how do we do things", "-a", "u", "--limit", str(top + 1))
    assert over.code == 2
    assert len(over.err_lines) == 1 and "--limit" in over.err_lines[0], over.err
    assert str(top) in over.err_lines[0]


def test_search_tag_filter_requires_the_tag(run, db) -> None:
    tagged = run.add(db, "Coffee order: oat flat white", "--tag", "non-inferable")
    run.add(db, "Coffee is served in the kitchen on floor 3")
    hits = run("--db", db, "search", "coffee", "--tag", "non-inferable", "--json").json()
    assert [h["id"] for h in hits] == [tagged]


def test_search_plain_output_lists_ranked_hits(run, db, seeded) -> None:
    result = run("--db", db, "search", "how do I reach Alice", "--agent", "u", "--limit", "3")
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0].startswith(" 1. ")
    assert MEMORIES[2][0] in lines[0]
    assert "[social | " in lines[0]
    assert lines[1].strip() == seeded[MEMORIES[2][0]]
    assert [line[:4] for line in lines if re.match(r"^ ?\d+\. ", line)] == [" 1. ", " 2. ", " 3. "]
    assert "dense=" not in result.out  # the breakdown only comes with --explain


def test_search_explain_prints_a_breakdown_per_hit(run, db, seeded) -> None:
    result = run("--db", db, "search", "which database does staging use", "-a", "u", "--explain")
    assert result.code == 0
    num = r"-?\d+\.\d+"
    # Raw values (cosine, BM25) and the calibrated relevance, then each feature's contribution.
    breakdown = re.compile(
        rf"^\s+cosine=(-|{num}( \(#\d+\))?) bm25=(-|{num} \(#\d+\)) relevance=({num}) "
        rf"recency={num} boost={num} mmr={num}.* final={num}$"
    )
    lines = result.out.splitlines()
    explained = [m for line in lines if (m := breakdown.match(line))]
    ranked = [line for line in lines if re.match(r"^ ?\d+\. ", line)]
    evidence = [line for line in lines if line.strip().startswith("evidence: ")]
    assert len(ranked) == len(MEMORIES)
    assert len(explained) == len(ranked) == len(evidence)
    # The best hit matches both retrievers, so both of its scores are shown with rank 1, and
    # its relevance (absolute, not rescaled to 1.0) is the score in the ranked line.
    assert MEMORIES[3][0] in ranked[0]
    assert re.match(rf"^\s+cosine={num} \(#1\) bm25={num} \(#1\) ", explained[0].group(0))
    top = float(explained[0].group(4))
    assert 0.5 < top < 1.0 and f"{top:.3f}" in ranked[0]
    assert "cos=" in evidence[0] and "coverage=" in evidence[0]
    # The off-topic gate's probability, once per hit (one value per query).
    on_topic = {line.strip() for line in lines if line.strip().startswith("on topic: ")}
    assert len([line for line in lines if line.strip().startswith("on topic: ")]) == len(ranked)
    (gate,) = on_topic
    assert 0.5 < float(gate.removeprefix("on topic: ")) <= 1.0
    # A hit only the dense retriever found shows "-" for BM25.
    assert any("bm25=- " in m.group(0) for m in explained[1:])


def test_search_explain_json_carries_the_score_object(run, db, seeded) -> None:
    hits = run("--db", db, "search", "peanut allergy", "-a", "u", "--explain", "--json").json()
    assert {"dense", "bm25", "fused", "final"} <= hits[0]["score"].keys()
    plain = run("--db", db, "search", "peanut allergy", "-a", "u", "--json").json()
    assert "score" not in plain[0]


def test_search_explain_shows_the_period_the_question_names(run, db) -> None:
    # "in April" without a year: the most recent April not after the moment of asking.
    april = run.add(db, "Signed the lease on the new flat.", "--created-at", "2026-04-17T12:00Z")
    run.add(db, "Booked the hotel in Lisbon for April 2027.", "--created-at", "2026-05-20T12:00Z")
    result = run(
        "--db",
        db,
        "search",
        "What did I sign in April?",
        "--asked-at",
        "2026-06-10T09:00Z",
        "--explain",
    )
    assert result.code == 0
    assert "period: 2026-04-01 .. 2026-05-01 (from 'in April')" in result.out
    assert april in result.out.splitlines()[2]  # the period line, then the first hit
    hits = run(
        "--db",
        db,
        "search",
        "What did I sign in April?",
        "--asked-at",
        "2026-06-10T09:00Z",
        "--explain",
        "--json",
    ).json()
    assert hits[0]["score"]["period"]["phrase"] == "in April"
    assert (
        run("--db", db, "search", "lease", "--explain", "--json").json()[0]["score"]["period"]
        is None
    )


def test_search_of_an_empty_store_says_so(run, db) -> None:
    result = run("--db", db, "search", "anything at all")
    assert result.code == 0
    assert result.out.strip() == "no memories found"
    assert run("--db", db, "search", "anything", "--json").json() == []


def test_markup_in_content_is_printed_literally(run, db) -> None:
    content = "Use [bold]strong[/bold] words and [red]colour[/red] sparingly"
    new_id = run.add(db, content)
    assert content in run("--db", db, "search", "strong words colour").out
    assert f"content: {content}" in run("--db", db, "get", new_id).out


# -- list ----------------------------------------------------------------------------------------


def test_list_type_only_lists_that_type(run, db) -> None:
    episodic = {
        run.add(db, "Debugged the flaky login test with Sam", "--type", "episodic"),
        run.add(db, "Demoed the dashboard to the client", "--type", "episodic"),
    }
    run.add(db, "The client's fiscal year starts in April", "--type", "semantic")
    run.add(db, "Run make lint before pushing", "--type", "procedural")
    rows = run.list(db, "--type", "episodic")
    assert {r["id"] for r in rows} == episodic
    assert {r["category"] for r in rows} == {"episodic"}


def test_list_label_filters_by_label(run, db) -> None:
    prefs = {
        run.add(db, "Likes tabs over spaces", "--label", "preferences"),
        run.add(db, "Wants answers in British English", "--label", "preferences"),
    }
    run.add(db, "Works at a logistics company", "--label", "profile")
    run.add(db, "Has a cat called Miso")
    rows = run.list(db, "--label", "preferences")
    assert {r["id"] for r in rows} == prefs
    assert {r["label"] for r in rows} == {"preferences"}
    assert run.list(db, "--label", "nothing-has-this") == []


# -- one name per concept: --type is the memory type, --label the free label, on every command --


def test_type_and_t_name_the_memory_type_on_every_command(run, db) -> None:
    episode = run.add(db, "Debugged the flaky login test with Sam", "--type", "episodic")
    procedure = run.add(db, "Run make lint before pushing", "-t", "procedural")
    run.add(db, "The client's fiscal year starts in April")
    assert [r["id"] for r in run.list(db, "-t", "episodic")] == [episode]
    assert [r["id"] for r in run.list(db, "--type", "procedural")] == [procedure]
    hits = run("--db", db, "search", "what do we do before pushing", "-t", "procedural", "--json")
    assert hits.code == 0 and [h["id"] for h in hits.json()] == [procedure]
    cleared = run("--db", db, "clear", "-t", "episodic", "--force")
    assert cleared.code == 0 and cleared.out.strip() == "deleted 1 episodic memories"
    assert {r["category"] for r in run.list(db)} == {"procedural", "semantic"}


def test_add_category_still_works_but_warns_once_on_stderr(run, db) -> None:
    result = run("--db", db, "add", "Met Dana for coffee", "--category", "episodic")
    assert result.code == 0
    assert result.err_lines == [
        "warning: --category is deprecated: use --type for the memory type "
        "(--label for the free-form label)"
    ]
    new_id = result.out.strip()
    assert run.list(db, "--type", "episodic")[0]["id"] == new_id
    short = run("--db", db, "add", "Lunch with Lee", "-c", "episodic")
    assert short.code == 0 and len(short.err_lines) == 1


def test_list_category_is_the_memory_type_too_never_silently_the_label(run, db) -> None:
    episode = run.add(db, "Debugged the flaky login test with Sam", "--type", "episodic")
    run.add(db, "Likes tabs over spaces", "--label", "episodic")
    result = run("--db", db, "list", "--category", "episodic", "--json")
    assert result.code == 0
    assert [r["id"] for r in result.json()] == [episode]
    assert len(result.err_lines) == 1 and "deprecated" in result.err_lines[0]


def test_type_and_a_different_category_together_are_refused(run, db) -> None:
    result = run("--db", db, "add", "x", "--type", "episodic", "--category", "semantic")
    assert result.code == 2
    assert result.err_lines[-1].startswith("error: ")
    assert "--category" in result.err_lines[-1] and "--type" in result.err_lines[-1]
    assert run.list(db) == []


def test_list_is_newest_first_and_respects_limit(run, db) -> None:
    dated = {
        "2024-03-01T09:00:00+00:00": "second oldest",
        "2024-01-01T09:00:00+00:00": "oldest",
        "2024-06-01T09:00:00+00:00": "newest",
        "2024-04-15T09:00:00+00:00": "middle",
    }
    ids = {when: run.add(db, content, "--created-at", when) for when, content in dated.items()}
    result = run("--db", db, "list", "--json", "--limit", "3")
    rows = result.json()
    newest_first = sorted(ids, reverse=True)
    assert [r["id"] for r in rows] == [ids[w] for w in newest_first[:3]]
    assert [r["content"] for r in rows] == ["newest", "middle", "second oldest"]
    assert len(run.list(db)) == 4


def test_list_default_limit_is_20(run, db) -> None:
    for i in range(21):
        run.add(db, f"numbered note {i}", "--created-at", f"2024-01-01T00:00:{i:02d}+00:00")
    rows = run("--db", db, "list", "--json").json()
    assert len(rows) == 20
    assert rows[0]["content"] == "numbered note 20"
    assert "numbered note 0" not in {r["content"] for r in rows}


def test_list_table_shows_ids_and_types(run, db) -> None:
    # procedural, not working: working memories are not persisted any more (issue 17).
    first = run.add(db, "Short note one", "--type", "procedural")
    second = run.add(db, "Short note two", "--type", "social")
    result = run("--db", db, "list")
    assert result.code == 0
    assert first in result.out
    assert second in result.out
    assert "procedural" in result.out
    assert "social" in result.out
    assert result.out.index(second) < result.out.index(first)  # newest first


def test_list_of_an_empty_store_says_so(run, db) -> None:
    result = run("--db", db, "list")
    assert result.code == 0
    assert result.out.strip() == "no memories"


# -- get -----------------------------------------------------------------------------------------


def test_get_json_returns_the_stored_entry(run, db) -> None:
    new_id = run.add(
        db,
        "Booked the Lisbon offsite for 12 people",
        "--type",
        "episodic",
        "--label",
        "travel",
        "--tag",
        "offsite",
        "--created-at",
        "2024-02-29T23:59:58.123456+00:00",
    )
    result = run("--db", db, "get", new_id, "--json")
    assert result.code == 0
    got = result.json()
    assert got["id"] == new_id
    assert got["agent_id"] == "default"
    assert got["category"] == "episodic"
    assert got["content"] == "Booked the Lisbon offsite for 12 people"
    assert got["label"] == "travel"
    assert got["tags"] == ["offsite"]
    assert got["metadata"] == {}
    assert got["created_at"] == "2024-02-29T23:59:58.123456+00:00"
    assert "relevance_score" not in got


def test_get_plain_prints_key_value_lines(run, db) -> None:
    new_id = run.add(db, "Plain output check", "--label", "misc")
    lines = run("--db", db, "get", new_id).out.splitlines()
    assert f"id: {new_id}" in lines
    assert "content: Plain output check" in lines
    assert "label: misc" in lines


def test_get_of_another_agents_id_is_not_found(run, db) -> None:
    new_id = run.add(db, "Secret of agent a", "--agent", "a")
    result = run("--db", db, "get", new_id, "--agent", "b")
    assert result.code == 2
    assert result.out == ""
    assert len(result.err_lines) == 1
    assert "not found" in result.err
    assert "Secret" not in result.err
    assert run("--db", db, "get", new_id, "--agent", "a").code == 0


# -- delete --------------------------------------------------------------------------------------


def test_delete_then_get_is_not_found(run, db) -> None:
    doomed = run.add(db, "Temporary note")
    kept = run.add(db, "Permanent note")
    result = run("--db", db, "delete", doomed)
    assert result.code == 0
    assert result.out.strip() == f"deleted {doomed}"
    gone = run("--db", db, "get", doomed)
    assert gone.code == 2
    assert "not found" in gone.err
    assert [e["id"] for e in run.list(db)] == [kept]


def test_delete_of_an_unknown_id_fails(run, db) -> None:
    kept = run.add(db, "Still here")
    result = run("--db", db, "delete", "01a20452-66aa-7000-9be4-25e5c3c5af99")
    assert result.code == 2
    assert len(result.err_lines) == 1
    assert "not found" in result.err
    assert [e["id"] for e in run.list(db)] == [kept]


def test_delete_cannot_remove_another_agents_memory(run, db) -> None:
    theirs = run.add(db, "Agent a's note", "--agent", "a")
    result = run("--db", db, "delete", theirs, "--agent", "b")
    assert result.code == 2
    assert [e["id"] for e in run.list(db, "--agent", "a")] == [theirs]


# -- clear ---------------------------------------------------------------------------------------


@pytest.fixture
def mixed(run, db) -> dict[str, set[str]]:
    """Two episodic and two semantic memories of the default agent, one of agent ``other``."""
    return {
        "episodic": {
            run.add(db, "Had a call with the landlord", "--type", "episodic"),
            run.add(db, "Fixed the printer on Monday", "--type", "episodic"),
        },
        "semantic": {
            run.add(db, "The landlord is called Mr Ortiz"),
            run.add(db, "The printer is an HP LaserJet"),
        },
        "other": {run.add(db, "Other agent's episode", "--type", "episodic", "-a", "other")},
    }


def test_clear_type_force_removes_only_that_type(run, db, mixed) -> None:
    result = run("--db", db, "clear", "--type", "episodic", "--force")
    assert result.code == 0
    assert result.out.strip() == "deleted 2 episodic memories"
    assert {e["id"] for e in run.list(db)} == mixed["semantic"]
    assert {e["id"] for e in run.list(db, "--agent", "other")} == mixed["other"]


def test_clear_force_removes_all_of_the_agent_only(run, db, mixed) -> None:
    result = run("--db", db, "clear", "-f")
    assert result.code == 0
    assert result.out.strip() == "deleted 4 memories"
    assert run.list(db) == []
    assert {e["id"] for e in run.list(db, "--agent", "other")} == mixed["other"]


@pytest.mark.parametrize("answer", ["n\n", "no\n", "\n", ""])
def test_clear_without_force_aborts_unless_confirmed(run, db, mixed, answer) -> None:
    result = run("--db", db, "clear", stdin=answer)
    assert "Delete 4 memories of agent 'default'?" in result.out
    assert "aborted" in result.out + result.err
    assert "deleted" not in result.out
    assert len(run.list(db)) == 4


def test_clear_at_end_of_input_exits_1(run, db, mixed) -> None:
    result = run("--db", db, "clear", stdin="")
    assert result.code == 1
    assert len(run.list(db)) == 4


def test_clear_declined_exits_1(run, db, mixed) -> None:
    result = run("--db", db, "clear", stdin="n\n")
    assert len(run.list(db)) == 4
    assert result.code == 1


def test_clear_without_force_deletes_when_confirmed(run, db, mixed) -> None:
    result = run("--db", db, "clear", "--type", "semantic", stdin="y\n")
    assert result.code == 0
    assert "Delete 2 semantic memories of agent 'default'?" in result.out
    assert "deleted 2 semantic memories" in result.out
    assert {e["id"] for e in run.list(db)} == mixed["episodic"]


# -- agents and store selection ------------------------------------------------------------------


def test_agents_are_isolated(run, db) -> None:
    a_ids = {
        run.add(db, "Agent A: the deploy key lives in the vault", "--agent", "a"),
        run.add(db, "Agent A: deploys happen on Tuesdays", "--agent", "a", "-t", "procedural"),
    }
    b_id = run.add(db, "Agent B: likes green tea", "--agent", "b")
    for query in ("deploy key vault", "Tuesday deploys", "green tea"):
        hits = run("--db", db, "search", query, "--agent", "b", "--json").json()
        assert [h["id"] for h in hits] == [b_id]
    assert [e["id"] for e in run.list(db, "--agent", "b")] == [b_id]
    assert {e["id"] for e in run.list(db, "--agent", "a")} == a_ids
    assert run.list(db, "--agent", "c") == []
    assert run("--db", db, "search", "deploy key", "--agent", "c", "--json").json() == []


def test_agent_can_come_from_the_environment(run, db, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_AGENT", "from-env")
    new_id = run.add(db, "Agent chosen by MEMVAULT_AGENT")
    monkeypatch.delenv("MEMVAULT_AGENT")
    assert [e["id"] for e in run.list(db, "--agent", "from-env")] == [new_id]
    assert run.list(db) == []


def test_memvault_url_selects_the_store_without_db(
    run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_db = tmp_path / "from-env.db"
    monkeypatch.setenv("MEMVAULT_URL", str(env_db))
    new_id = run("add", "Stored in the store named by MEMVAULT_URL").out.strip()
    assert env_db.is_file()
    assert [e["id"] for e in run("list", "--json").json()] == [new_id]
    # --db still wins over the variable.
    other = tmp_path / "explicit.db"
    run("--db", str(other), "add", "Stored in the explicit store")
    monkeypatch.delenv("MEMVAULT_URL")
    assert [e["id"] for e in run.list(str(env_db))] == [new_id]
    assert [e["content"] for e in run.list(str(other))] == ["Stored in the explicit store"]


def test_sqlite_url_form_is_accepted(run, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'url-form.db'}"
    new_id = run.add(url, "Stored via a sqlite:/// URL")
    assert (tmp_path / "url-form.db").is_file()
    assert [e["id"] for e in run.list(str(tmp_path / "url-form.db"))] == [new_id]


def test_memory_url_keeps_nothing_between_runs(run, tmp_path: Path) -> None:
    run.add("memory://", "Lives only for one command")
    assert run.list("memory://") == []
    assert list(tmp_path.iterdir()) == []
