"""A2A's pure parts: the version check, calls and messages read, records shown as tasks."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest

from proxy.a2a.tasks import TaskView, state_of, task_json
from proxy.a2a.wire import (
    InvalidParamsError,
    InvalidRequestError,
    VersionNotSupportedError,
    check_version,
    read_call,
    read_list_query,
    read_message,
)
from ticketing.store.task_records import StepEnding, StepStatus, StoredStep, StoredTask

NOW = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
TASK = StoredTask("t1", "key-1", "Summarise.", "null", NOW)


def _step(**changes: object) -> StoredStep:
    values: dict[str, object] = {
        "step_id": "s1",
        "task_id": "t1",
        "seq": 1,
        "input": None,
        "additional_input": "null",
        "status": StepStatus.RUNNING,
        "ticket_id": 1,
        "output": None,
        "is_last": False,
        "created_at": NOW,
    }
    values.update(changes)
    return StoredStep(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize("version", ["1.0", "1.1", " 1.0 "])
def test_version_1_x_is_accepted(version: str) -> None:
    """Any 1.x passes: the spec negotiates on Major.Minor, and 1.x stays compatible."""
    check_version(version)


@pytest.mark.parametrize("version", [None, "", "0.3", "2.0", "latest"])
def test_version_other_than_1_x_is_refused(version: str | None) -> None:
    """An absent header is 0.3 (§3.6.2); 0.3, 2.0 and nonsense are VersionNotSupported."""
    with pytest.raises(VersionNotSupportedError):
        check_version(version)


def test_batch_request_is_an_invalid_request() -> None:
    """A JSON-RPC batch (a list) is refused: each call stands alone."""
    with pytest.raises(InvalidRequestError):
        read_call(b'[{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}]')


def test_boolean_id_is_an_invalid_request() -> None:
    """``"id": true`` is neither a string nor a number."""
    with pytest.raises(InvalidRequestError):
        read_call(b'{"jsonrpc": "2.0", "id": true, "method": "GetTask"}')


def test_message_parts_are_read_into_text_data_and_files() -> None:
    """Text parts join with blank lines; data parts and raw files are kept apart."""
    raw = base64.b64encode(b"\x00\x01").decode()
    incoming = read_message(
        {
            "message": {
                "role": "ROLE_USER",
                "taskId": "t1",
                "parts": [
                    {"text": "One."},
                    {"data": {"k": 1}},
                    {"text": "Two."},
                    {"raw": raw, "filename": "a.bin"},
                ],
            },
            "configuration": {"returnImmediately": True, "historyLength": 2},
        }
    )
    assert incoming.text == "One.\n\nTwo."
    assert incoming.data == [{"k": 1}]
    assert [(f.name, f.data) for f in incoming.files] == [("a.bin", b"\x00\x01")]
    assert (incoming.task_id, incoming.return_immediately, incoming.history_length) == (
        "t1",
        True,
        2,
    )


def test_raw_part_that_is_not_base64_is_invalid_params() -> None:
    """A raw part must be base64: anything else is refused, not guessed at."""
    with pytest.raises(InvalidParamsError):
        read_message({"message": {"role": "ROLE_USER", "parts": [{"raw": "***"}]}})


def test_page_token_not_issued_by_this_agent_is_invalid_params() -> None:
    """Only the tokens ListTasks hands out (offsets) are taken."""
    with pytest.raises(InvalidParamsError):
        read_list_query({"pageToken": "../../etc"})


@pytest.mark.parametrize(
    ("step", "canceled", "state"),
    [
        (None, False, "TASK_STATE_SUBMITTED"),
        (_step(status=StepStatus.CREATED, ticket_id=None), False, "TASK_STATE_SUBMITTED"),
        (_step(), False, "TASK_STATE_WORKING"),
        (
            _step(status=StepStatus.COMPLETED, ending=StepEnding.ANSWER),
            False,
            "TASK_STATE_INPUT_REQUIRED",
        ),
        (
            _step(status=StepStatus.COMPLETED, is_last=True, ending=StepEnding.ANSWER),
            False,
            "TASK_STATE_COMPLETED",
        ),
        (
            _step(status=StepStatus.COMPLETED, is_last=True, ending=StepEnding.EXPIRY),
            False,
            "TASK_STATE_FAILED",
        ),
        (
            _step(status=StepStatus.COMPLETED, is_last=True, ending=StepEnding.CANCEL),
            True,
            "TASK_STATE_CANCELED",
        ),
        (_step(status=StepStatus.COMPLETED, ending=StepEnding.ANSWER), True, "TASK_STATE_CANCELED"),
    ],
)
def test_state_is_read_from_the_newest_step_and_the_cancel(
    step: StoredStep | None, canceled: bool, state: str
) -> None:
    """Each way a step ends (and a cancel) maps to its A2A task state."""
    task = StoredTask(**{**TASK.__dict__, "canceled_at": NOW if canceled else None})
    assert state_of(TaskView(task, [step] if step else [])) == state


def test_task_shows_the_question_as_its_status_message_and_stamps_milliseconds() -> None:
    """Input required: the question is the agent's status message; times are ISO 8601 Z."""
    asked = _step(
        status=StepStatus.COMPLETED,
        output="Which quarter?",
        ending=StepEnding.ANSWER,
        ended_at=NOW + timedelta(seconds=1),
    )
    task = task_json(TaskView(TASK, [asked]))
    assert task["status"]["timestamp"] == "2026-01-02T03:04:06.678Z"
    assert task["status"]["message"]["role"] == "ROLE_AGENT"
    assert task["status"]["message"]["parts"] == [{"text": "Which quarter?"}]
    assert task["artifacts"] == []
    assert [m["role"] for m in task["history"]] == ["ROLE_USER", "ROLE_AGENT"]
    assert "history" not in task_json(TaskView(TASK, [asked]), history_length=0)
