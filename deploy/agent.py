"""A tiny agent for docker-compose.yml: ask through ticketproxy, print the answer, repeat.

It uses the openai client as any agent does (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``), with
its read timeout above the proxy's wait and its own retries, which re-attach to the ticket.
"""

import os
import time

import openai

client = openai.OpenAI(timeout=3700, max_retries=10)
question = os.environ.get("AGENT_QUESTION", "Which branch should I deploy?")
for round_number in range(1, 1_000_000):
    asked = f"{question} (round {round_number})"
    print(f"asking: {asked}", flush=True)
    completion = client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": asked}]
    )
    print(f"answer: {completion.choices[0].message.content}", flush=True)
    time.sleep(5)
