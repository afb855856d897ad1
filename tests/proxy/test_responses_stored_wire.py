"""Stored responses' wire format, pure: input items with ids, the echo, input_items pages."""

from __future__ import annotations

import pytest

from proxy.errors import InvalidRequest
from proxy.wire.responses_api.objects import ResponseEcho
from proxy.wire.responses_api.stored import (
    echo_from_json,
    echo_to_json,
    input_items,
    issued_calls,
    page_items,
    response_id_of_item,
)

ITEMS = [{"id": f"item_{n}", "type": "message"} for n in range(5)]


def test_string_input_is_one_user_message_item_with_an_id() -> None:
    """A string input is listed as OpenAI lists it: a user message of input_text."""
    [item] = input_items("hello", "resp_abc")
    assert item == {
        "id": "msg_abc_in0",
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "hello"}],
        "status": "completed",
    }


def test_items_keep_their_own_ids_and_get_one_when_they_have_none() -> None:
    """A client's item id is kept; an output without one gets an fco_ id."""
    items = input_items(
        [{"id": "fc_9", "type": "function_call"}, {"type": "function_call_output"}], "resp_abc"
    )
    assert [item["id"] for item in items] == ["fc_9", "fco_abc_in1"]


def test_issued_calls_are_the_function_calls_of_an_output() -> None:
    """Only function_call items issue calls the next input may answer."""
    output = [{"type": "message"}, {"type": "function_call", "call_id": "call_1"}]
    assert issued_calls(output) == frozenset({"call_1"})


def test_echo_survives_the_store() -> None:
    """An echo read back from its JSON is the echo that was kept."""
    echo = ResponseEcho(model="gpt-4o", input_tokens=3, tools=({"type": "function"},))
    assert echo_from_json(echo_to_json(echo)) == echo


def test_input_items_are_newest_first_by_default_and_page_after_an_id() -> None:
    """order defaults to desc; after and limit page on, and has_more says when to stop."""
    first = page_items(ITEMS, {"limit": "2"})
    assert [i["id"] for i in first["data"]] == ["item_4", "item_3"]
    assert (first["first_id"], first["last_id"], first["has_more"]) == ("item_4", "item_3", True)
    last = page_items(ITEMS, {"limit": "2", "order": "asc", "after": "item_2"})
    assert [i["id"] for i in last["data"]] == ["item_3", "item_4"]
    assert last["has_more"] is False


@pytest.mark.parametrize(
    ("query", "param"),
    [({"limit": "0"}, "limit"), ({"limit": "x"}, "limit"), ({"order": "up"}, "order")],
)
def test_bad_paging_is_refused_naming_the_parameter(query: dict[str, str], param: str) -> None:
    """A limit outside 1..100 or an unknown order is a 400 naming it."""
    with pytest.raises(InvalidRequest) as caught:
        page_items(ITEMS, query)
    assert caught.value.param == param


def test_an_items_id_names_the_response_that_gave_it() -> None:
    """Output, call and input item ids lead to their response; other ids lead nowhere."""
    assert response_id_of_item("msg_abc1") == "resp_abc1"
    assert response_id_of_item("fc_abc1_0") == "resp_abc1"
    assert response_id_of_item("fco_abc1_in2") == "resp_abc1"
    assert response_id_of_item("rs_abc1") is None
    assert response_id_of_item("msg_../x") is None
    assert response_id_of_item("msg") is None
