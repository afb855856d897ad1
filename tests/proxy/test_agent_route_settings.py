"""TICKETPROXY_AGENT_ROUTES read at start, and which route a ticket takes (pure)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from proxy.agent_route_settings import VARIABLE, read_agent_routes
from proxy.errors import ConfigError
from proxy.settings import Settings
from ticketing.agent_routes import LABELS_METADATA_KEY, AgentRoute, request_labels, route_for

ALICE = AgentRoute(
    editor="alice", repository="alice/ticketproxy-agent", workflow="agent.yml", model="gpt-4-turbo"
)


def test_the_readmes_worked_example_routes_gpt_4_turbo_to_alices_agent() -> None:
    """``model:gpt-4-turbo=alice/ticketproxy-agent/agent.yml`` is alice's agent on main."""
    routes = read_agent_routes({VARIABLE: "model:gpt-4-turbo=alice/ticketproxy-agent/agent.yml"})
    assert routes == (ALICE,)
    assert routes[0].ref == "main"
    assert routes[0].name == "alice's agent"


def test_settings_carry_the_routes_and_none_by_default() -> None:
    """``Settings.from_env`` is the one reader; without the variable no ticket is routed."""
    assert Settings.from_env({}).agent_routes == ()
    env = {VARIABLE: "model:gpt-4-turbo=alice/ticketproxy-agent/agent.yml"}
    assert Settings.from_env(env).agent_routes == (ALICE,)


def test_inline_routes_take_a_client_a_ref_and_several_routes() -> None:
    """Routes are separated by ``;``; a route may ask for a client, and name a ref."""
    value = "model:gpt-4o,client:ci=bob/agent/draft.yaml@release; client:support=carol/helper/42"
    bob, carol = read_agent_routes({VARIABLE: value})
    assert (bob.editor, bob.model, bob.client, bob.ref) == ("bob", "gpt-4o", "ci", "release")
    assert (carol.workflow, carol.client, carol.model) == ("42", "support", None)


def test_a_toml_file_in_the_review_policys_style_is_read(tmp_path: Path) -> None:
    """A ``.toml`` path holds ``[[route]]`` tables; ``editor`` may differ from the fork's owner."""
    path = tmp_path / "agents.toml"
    path.write_text(
        '[[route]]\nmodel = "gpt-4-turbo"\nrepository = "alice/ticketproxy-agent"\n'
        'workflow = "agent.yml"\n\n[[route]]\nclient = "ops"\neditor = "bob"\n'
        'repository = "team/agents"\nworkflow = "bob.yml"\nref = "v2"\n',
        encoding="utf-8",
    )
    alice, bob = read_agent_routes({VARIABLE: str(path)})
    assert alice == ALICE
    assert (bob.editor, bob.repository, bob.ref, bob.client) == ("bob", "team/agents", "v2", "ops")


def test_inline_toml_is_read() -> None:
    """The same tables may be given inline, starting with ``[[route]]``."""
    value = '[[route]]\nmodel = "gpt-4-turbo"\nrepository = "alice/ticketproxy-agent"\n'
    value += 'workflow = "agent.yml"\n'
    assert read_agent_routes({VARIABLE: value}) == (ALICE,)


def test_the_first_matching_route_wins_and_a_route_with_both_asks_for_both() -> None:
    """Model and client must both match when a route names both; otherwise the next is tried."""
    both = AgentRoute(editor="bob", repository="bob/a", workflow="a.yml", model="m", client="c")
    routes = (both, ALICE)
    assert route_for(routes, model="m", client="c") == both
    assert route_for(routes, model="m", client="other") is None
    assert route_for(routes, model="gpt-4-turbo", client="anyone") == ALICE


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("gpt-4-turbo", "no WHAT=TARGET"),
        ("tag:docs=alice/ticketproxy-agent/agent.yml", "not model:ID, client:NAME or label:NAME"),
        ("label:a,b=alice/ticketproxy-agent/agent.yml", "not model:ID, client:NAME or label"),
        ("[[route]]\nrepository = 'a/x'\nworkflow = 'a.yml'\nlabel = 'a,b'", "without a comma"),
        ("model:gpt-4-turbo=alice", "is not OWNER/REPO"),
        ("model:gpt-4-turbo=alice/agent.yml", "the workflow '' is neither"),
        ("model:gpt-4-turbo=alice/ticketproxy-agent/agent.txt", "neither a file name"),
        ("model:gpt-4-turbo=alice/ticketproxy-agent/agent.yml@a..b", "not a branch or tag"),
        (";", "names no route"),
        ("[[route]]\nrepository = 'alice/x'\nworkflow = 'a.yml'", "but not which tickets"),
        ("[[route]]\nmodle = 'x'", "unknown key(s) modle"),
        ("[[route]\n", "not valid TOML"),
    ],
)
def test_a_routes_setting_that_does_not_parse_names_the_variable(value: str, says: str) -> None:
    """Each mistake is a ConfigError that names TICKETPROXY_AGENT_ROUTES and what is wrong."""
    with pytest.raises(ConfigError) as caught:
        read_agent_routes({VARIABLE: value})
    assert VARIABLE in str(caught.value)
    assert says in str(caught.value)


def test_a_routes_file_that_cannot_be_read_names_the_variable_and_the_file(
    tmp_path: Path,
) -> None:
    """A missing ``.toml`` file is a ConfigError naming the variable and the path."""
    missing = tmp_path / "nowhere.toml"
    with pytest.raises(ConfigError, match=VARIABLE) as caught:
        read_agent_routes({VARIABLE: str(missing)})
    assert str(missing) in str(caught.value)


def test_a_label_route_takes_requests_whose_metadata_carries_the_label() -> None:
    """``label:billing`` matches ``metadata.ticketproxy_labels`` containing billing, any case."""
    [route] = read_agent_routes({VARIABLE: "label:Billing=alice/ticketproxy-agent/agent.yml"})
    assert route.label == "Billing"
    assert request_labels({LABELS_METADATA_KEY: " urgent, BILLING ,"}) == {"urgent", "billing"}
    labels = request_labels({LABELS_METADATA_KEY: "urgent,billing"})
    assert route_for([route], model="any", client="any", labels=labels) == route
    assert route_for([route], model="any", client="any", labels=frozenset({"bill"})) is None
    assert route_for([route], model="any", client="any") is None


def test_a_toml_route_with_a_model_and_a_label_asks_for_both() -> None:
    """Selectors add up: the model alone, or the label alone, is not enough."""
    value = "[[route]]\nrepository = 'alice/x'\nworkflow = 'a.yml'\nmodel = 'm'\nlabel = 'docs'"
    [route] = read_agent_routes({VARIABLE: value})
    docs = frozenset({"docs"})
    assert route_for([route], model="m", client="c", labels=docs) == route
    assert route_for([route], model="m", client="c") is None
    assert route_for([route], model="other", client="c", labels=docs) is None


def test_the_readmes_label_example_routes_billing_to_bob_and_gpt_4_turbo_to_alice() -> None:
    """The README's label routes parse as written and send each request where it says."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    [value] = re.findall(r"TICKETPROXY_AGENT_ROUTES='(label:[^']+)'", readme)
    bob, alice = read_agent_routes({VARIABLE: value})
    billing = request_labels({LABELS_METADATA_KEY: "billing,urgent"})
    assert route_for((bob, alice), model="gpt-4o", client="c", labels=billing) == bob
    assert route_for((bob, alice), model="gpt-4-turbo", client="c") == alice
    assert (bob.editor, alice.editor) == ("bob", "alice")
