"""Throughput of retries of an already-answered request, against a bare aiohttp handler.

Clients retry: the openai client and AutoGPT re-send the same bytes after a timeout or a
429, and a request answered within the redeliver window (1 h) is answered again from the
store, without GitHub. This measures how many such retries one ``ticketproxy serve``
process answers per second, and compares it in the same run with a bare aiohttp server
(:mod:`bench.bare_server`, its own process too) that returns the same completion bytes with
no work at all.

Both servers are driven by ``wrk`` (Debian's ``/usr/bin/wrk``, a compiled load generator in
its own process, so that the servers, not the client, set the pace): one wrk thread,
``--concurrency`` connections (default 16) sending the identical ``POST
/v1/chat/completions`` back to back for ``--seconds`` (default 5) after an unmeasured
one-second wrk run as warm-up. A small Lua script sets the method, headers and body, and its
``response`` hook counts each answer as good only when it is a 200 whose body is the
completion (leading heartbeat spaces aside); a single other answer or socket error fails the
bench. The two are measured alternately, ``--rounds`` times each (default 3), and the median
is compared, so that other load on the machine hits both alike. The servers' and wrk's CPU
use is shown too: a server below ~90% of a core was waiting on the generator, or (on a
shared machine) on other processes for the CPU. So each run also gives requests per second
of the server's own CPU time, which other load leaves alone, and its median is compared too.

What a retry costs beyond the bare handler: one middleware (:mod:`proxy.front_door`: request
id, Host/Origin/content-type checks and client key as plain calls, error envelopes), the
route handler, the body's digest and the lookup of the kept bytes. Folding five middlewares
into that one took a quiet-machine run from 57% to 68% by rate (57% to 66% per CPU-second),
2026-11-26; runs on this 2-core machine move by about ±10 points.

Target: the proxy answers retries at >= 50% of the bare handler's rate, both per second and
per CPU-second. Exits 1 otherwise. Run: ``python -m bench.retry_throughput`` (``--rounds 5``
on a busy machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import resource
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from bench.processes import ServerProcess, bare_process, proxy_process
from bench.sandboxes import start_bench_github

CONCURRENCY = 16
SECONDS = 5.0
WARM_UP = 1.0
ROUNDS = 3
TARGET_SHARE = 0.5
WRK = "/usr/bin/wrk"
# Below this share of a core the server was waiting on the load generator.
CPU_BOUND_PERCENT = 90.0
# The wrk script: request from files, a good/bad count per thread, one summary line at the end.
WRK_SCRIPT = """
local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local data = f:read("*a")
  f:close()
  return data
end
wrk.method = "POST"
wrk.body = slurp(%(request)s)
wrk.headers["Content-Type"] = "application/json"
local expected = slurp(%(expected)s)
local threads = {}
function setup(thread)
  table.insert(threads, thread)
end
function init(args)
  good = 0
  bad = 0
  first_bad = ""
end
function response(status, headers, body)
  if status == 200 and body:gsub("^%%s+", "", 1) == expected then
    good = good + 1
  else
    bad = bad + 1
    if first_bad == "" then first_bad = status .. " " .. body:sub(1, 200) end
  end
end
function done(summary, latency, requests)
  local good_all, bad_all, why = 0, 0, ""
  for _, t in ipairs(threads) do
    good_all = good_all + t:get("good")
    bad_all = bad_all + t:get("bad")
    if why == "" then why = t:get("first_bad") end
  end
  local e = summary.errors
  io.write(string.format(
    "WRK-RESULT good=%%d bad=%%d requests=%%d micros=%%d errors=%%d\\n",
    good_all, bad_all, summary.requests, summary.duration,
    e.connect + e.read + e.write + e.status + e.timeout))
  if why ~= "" then io.write("WRK-FIRST-BAD " .. why .. "\\n") end
end
"""
RESULT_LINE = re.compile(
    r"WRK-RESULT good=(\d+) bad=(\d+) requests=(\d+) micros=(\d+) errors=(\d+)"
)
TICKET_HEADER = "x-ticketproxy-ticket"
ANSWER = "The build is green: 212 tests passed."
REQUEST: dict[str, Any] = {
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "You are BuildBot, an agent that watches CI."},
        {"role": "user", "content": "Is the build green? Answer in one sentence."},
    ],
}


@dataclass(frozen=True)
class Run:
    """One timed run against one server."""

    server: str
    requests: int
    seconds: float
    cpu_seconds: float
    wrk_cpu_seconds: float

    @property
    def per_second(self) -> float:
        """Return completed requests per second."""
        return self.requests / self.seconds

    @property
    def per_cpu_second(self) -> float:
        """Return completed requests per second of the server's own CPU time."""
        return self.requests / max(self.cpu_seconds, 1e-9)

    @property
    def cpu_percent(self) -> float:
        """Return the server's CPU use in percent of one core."""
        return 100 * self.cpu_seconds / self.seconds

    @property
    def wrk_cpu_percent(self) -> float:
        """Return wrk's CPU use in percent of one core."""
        return 100 * self.wrk_cpu_seconds / self.seconds


async def first_answer(server: ServerProcess, answer: Any) -> bytes:
    """Ask the request once, let ``answer(number)`` post the signed answer, return the body."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(server.url + "/v1/chat/completions", json=REQUEST) as resp,
    ):
        if resp.status != 200:
            raise RuntimeError(f"the proxy answered {resp.status}: {await resp.text()}")
        await answer(http, int(resp.headers[TICKET_HEADER].rsplit("/", 1)[1]))
        return await resp.read()


def write_wrk_script(workdir: Path, completion: bytes) -> Path:
    """Write the request, the expected completion and the wrk script; return the script."""
    request, expected = workdir / "request.json", workdir / "expected.json"
    request.write_bytes(json.dumps(REQUEST).encode())
    expected.write_bytes(completion)
    script = workdir / "retry.lua"
    # JSON string literals are valid Lua string literals for these ASCII paths.
    script.write_text(
        WRK_SCRIPT % {"request": json.dumps(str(request)), "expected": json.dumps(str(expected))}
    )
    return script


def children_cpu() -> float:
    """Return the CPU seconds of this process's reaped children (wrk, once it exits)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def wrk(server: ServerProcess, script: Path, *, concurrency: int, seconds: float) -> str:
    """Run wrk against ``server`` for ``seconds`` and return its output."""
    process = await asyncio.create_subprocess_exec(
        WRK,
        "--threads",
        "1",
        "--connections",
        str(concurrency),
        "--duration",
        f"{seconds:g}s",
        "--timeout",
        "10s",
        "--script",
        str(script),
        server.url + "/v1/chat/completions",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output = (await process.communicate())[0].decode(errors="replace")
    if process.returncode != 0:
        raise RuntimeError(f"wrk exited with {process.returncode}:\n{output}")
    return output


async def hammer(server: ServerProcess, script: Path, *, concurrency: int, seconds: float) -> Run:
    """Load ``server`` with wrk for ``seconds`` (after a warm-up run) and count good answers.

    Raises when any answer was not the 200 completion, or any socket failed.
    """
    await wrk(server, script, concurrency=concurrency, seconds=WARM_UP)
    cpu_before, wrk_before = server.usage().cpu_seconds, children_cpu()
    output = await wrk(server, script, concurrency=concurrency, seconds=seconds)
    cpu = server.usage().cpu_seconds - cpu_before
    wrk_cpu = children_cpu() - wrk_before
    found = RESULT_LINE.search(output)
    if found is None:
        raise RuntimeError(f"wrk printed no result line:\n{output}")
    good, bad, requests, micros, errors = (int(g) for g in found.groups())
    if bad or errors or good != requests:
        raise RuntimeError(
            f"{server.name}: {bad} answers were not the 200 completion and {errors} requests "
            f"failed, of {requests}:\n{output}"
        )
    return Run(
        server=server.name,
        requests=good,
        seconds=micros / 1e6,
        cpu_seconds=cpu,
        wrk_cpu_seconds=wrk_cpu,
    )


def report(runs: Sequence[Run], concurrency: int) -> list[str]:
    """Return the printed table."""
    header = (
        f"{'round':>5} | {'server':<6} | {'requests':>8} | {'req/s':>8} | "
        f"{'server CPU %':>12} | {'req/CPU-s':>9} | {'wrk CPU %':>9}"
    )
    lines = [
        f"Retries of one answered request, driven by wrk (1 thread, {concurrency} connections), "
        f"{runs[0].seconds:.0f} s per run; every answer checked to be the 200 completion",
        header,
        "-" * len(header),
    ]
    for index, run in enumerate(runs):
        lines.append(
            f"{index // 2 + 1:>5} | {run.server:<6} | {run.requests:>8,} | "
            f"{run.per_second:>8.0f} | {run.cpu_percent:>12.0f} | {run.per_cpu_second:>9.0f} | "
            f"{run.wrk_cpu_percent:>9.0f}"
            + ("" if run.cpu_percent >= CPU_BOUND_PERCENT else "  (not CPU-bound)")
        )
    return lines


def median_rate(runs: Sequence[Run], server: str, *, per_cpu: bool = False) -> float:
    """Return the median requests per second (of wall or of CPU time) of ``server``'s runs."""
    return statistics.median(
        run.per_cpu_second if per_cpu else run.per_second for run in runs if run.server == server
    )


async def run(concurrency: int, seconds: float, rounds: int) -> int:
    """Measure both servers, print the table and return the exit status."""
    with tempfile.TemporaryDirectory(prefix="ticketproxy-bench-") as tmp:
        workdir = Path(tmp)
        github = await start_bench_github(workdir)
        proxy = proxy_process(github.proxy_environ(workdir / "data"), workdir=workdir)
        bare: ServerProcess | None = None
        runs: list[Run] = []
        try:
            await proxy.start()

            async def answer(http: aiohttp.ClientSession, number: int) -> None:
                await github.answer(http, number, ANSWER)

            completion = (await first_answer(proxy, answer)).lstrip()
            if json.loads(completion)["choices"][0]["message"]["content"] != ANSWER:
                raise RuntimeError(f"the first answer is not the signed one: {completion!r}")
            completion_file = workdir / "completion.json"
            completion_file.write_bytes(completion)
            script = write_wrk_script(workdir, completion)
            bare = bare_process(completion_file, workdir=workdir)
            await bare.start()
            # Let the first answer's follow-ups (labels, closing) reach GitHub first.
            await asyncio.sleep(1.0)
            seen = len(github.sandbox.requests)
            for _ in range(rounds):
                for server in (bare, proxy):
                    runs.append(
                        await hammer(server, script, concurrency=concurrency, seconds=seconds)
                    )
            during = len(github.sandbox.requests) - seen
        finally:
            if bare is not None:
                await bare.stop()
            await proxy.stop()
            await github.stop()
    print("\n".join(report(runs, concurrency)))
    bare_rate, proxy_rate = median_rate(runs, "bare"), median_rate(runs, "proxy")
    share = proxy_rate / bare_rate
    bare_cpu, proxy_cpu = (median_rate(runs, s, per_cpu=True) for s in ("bare", "proxy"))
    cpu_share = proxy_cpu / bare_cpu
    print(
        f"median: bare {bare_rate:.0f} req/s, proxy {proxy_rate:.0f} req/s: "
        f"the proxy answers retries at {100 * share:.0f}% of the bare handler's rate; "
        f"per CPU-second bare {bare_cpu:.0f}, proxy {proxy_cpu:.0f}: {100 * cpu_share:.0f}% "
        f"(GitHub requests made during the retry runs: {during})",
        flush=True,
    )
    if min(share, cpu_share) < TARGET_SHARE:
        print(
            f"FAIL: {100 * min(share, cpu_share):.0f}% < {100 * TARGET_SHARE:.0f}% of the bare "
            "handler",
            file=sys.stderr,
        )
        return 1
    print(f"OK: >= {100 * TARGET_SHARE:.0f}% of the bare handler")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark from the command line."""
    parser = argparse.ArgumentParser(prog="python -m bench.retry_throughput", description=__doc__)
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY, help="connections (16)")
    parser.add_argument("--seconds", type=float, default=SECONDS, help="seconds per run (5)")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="runs per server (3)")
    args = parser.parse_args(argv)
    return asyncio.run(run(args.concurrency, args.seconds, args.rounds))


if __name__ == "__main__":
    sys.exit(main())
