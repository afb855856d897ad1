"""agbenchmark's loop with the official ``agent-protocol-client``, run as its own process.

Run by ``tests/proxy/test_agent_protocol_client.py`` with the client's own venv
(``.venv-apclient``: the client pins pydantic<2). Mirrors ``agbenchmark``'s
``run_api_agent``: create a task, upload the input files, post body-less steps until one
``is_last``, then list the task's artifacts and download each. Prints one JSON object.

Usage: ``python agbenchmark_loop.py BASE_URL CLIENT_KEY INPUT_FILE``
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from agent_protocol_client import AgentApi, ApiClient, Configuration, TaskRequestBody


async def run(base_url: str, key: str, input_file: str) -> dict[str, Any]:
    """Drive one task to its last step, as agbenchmark does, and report what came back."""
    configuration = Configuration(host=base_url)
    async with ApiClient(configuration, "Authorization", f"Bearer {key}") as api_client:
        api = AgentApi(api_client)
        task = await api.create_agent_task(
            task_request_body=TaskRequestBody(
                input="Write a haiku about the sea to haiku.txt.",
                additional_input={"category": ["generalist"]},
            )
        )
        await api.upload_agent_task_artifacts(
            task_id=task.task_id, file=input_file, relative_path="artifacts_in"
        )
        steps = []
        while True:
            step = await api.execute_agent_task_step(task_id=task.task_id)
            steps.append(
                {
                    "step_id": step.step_id,
                    "status": step.status,
                    "output": step.output,
                    "is_last": step.is_last,
                }
            )
            if step.is_last:
                break
        listed = await api.list_agent_task_artifacts(task_id=task.task_id)
        files = []
        for artifact in listed.artifacts:
            content = await api.download_agent_task_artifact(
                task_id=task.task_id, artifact_id=artifact.artifact_id
            )
            files.append(
                {
                    "file_name": artifact.file_name,
                    "relative_path": artifact.relative_path,
                    "agent_created": artifact.agent_created,
                    "content": bytes(content).hex(),
                }
            )
        fetched = await api.get_agent_task(task_id=task.task_id)
        all_steps = await api.list_agent_task_steps(task_id=task.task_id)
        return {
            "task_id": task.task_id,
            "steps": steps,
            "files": files,
            "task_artifacts": len(fetched.artifacts),
            "listed_steps": all_steps.pagination.total_items,
        }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(*sys.argv[1:4]))))
