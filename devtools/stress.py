"""Load for the stress test and the crash test: agent processes that talk to
the daemon over REST and MCP at full speed, and a reviewer process that
decides proposals (through reviews.actions, or through the site's forms).

Run as `python -m devtools.stress agent|reviewer|flood ...` (the `stress`
command and tests/test_crash.py start them). A flood process is one agent
searching from N concurrent workers as fast as it can, ignoring Retry-After:
the stress command measures what it does to the other agents. Each process appends one JSON
line per acknowledged operation to its --out file as it goes (so a process
killed mid-run still leaves its acknowledgements) and ends with a summary
line. Agent processes never touch the database.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path

from devtools.stress_log import Log

WORDS = (
    "billing ledger checkout search auth payments inventory shipping reporting notifications catalog pricing "
    "fraud onboarding analytics gateway scheduler exports invoicing identity media support warehouse postgres "
    "redis kafka terraform kubernetes helm grafana sentry stripe vault nginx celery cron worker queue cache "
    "replica backup rollout canary freeze migration schema index shard region tenant quota budget"
).split()
VERBS = ("deploys", "rotates", "migrates", "backs up", "restarts", "monitors", "scales", "archives", "rebuilds")
WHEN = (
    "every weekday",
    "on Fridays",
    "before each release",
    "twice a month",
    "after every incident",
    "at 09:00 UTC",
    "once a quarter",
    "on the first Monday",
    "every night",
)


def _content(rng: random.Random, agent: str, n: int) -> dict:
    words = rng.sample(WORDS, 6)
    title = f"{words[0].title()} {words[1]} note {agent}-{n}"
    body = (
        f"The {words[0]} {words[1]} {rng.choice(VERBS)} {rng.choice(WHEN)}; {words[2]} and {words[3]} depend "
        f"on it, and the {words[4]} team owns the {words[5]} runbook (ref {agent}-{n}-{rng.randrange(10**9)})."
    )
    return {
        "title": title,
        "body": body,
        "kind": rng.choice(["fact", "procedure", "decision"]),
        "space": rng.choice(["team", "personal"]),
        "tags": [words[0], words[1]],
        "reason": f"Stress test agent {agent} learned this in run step {n}.",
    }


# --------------------------------------------------------------------------- agents


async def run_agent(args) -> int:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    rng = random.Random(args.seed)
    log = Log(Path(args.out))
    headers = {"Authorization": f"Bearer {args.token}"}
    deadline = time.monotonic() + args.seconds
    known: list[str] = []  # record ids seen in search results
    n = 0
    counts = {"ok": 0, "refused": 0, "failed": 0}
    next_call = time.monotonic()
    async with httpx2.AsyncClient(base_url=args.url, headers=headers, timeout=60) as http:
        mcp_ctx = None
        client = None
        if args.mcp_share > 0:
            mcp_http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120))
            mcp_ctx = Client(streamable_http_client(args.url + "/mcp", http_client=mcp_http))
            client = await mcp_ctx.__aenter__()
        try:
            while time.monotonic() < deadline:
                if args.interval:  # a paced agent: at most one call per interval
                    next_call += args.interval
                    await asyncio.sleep(max(0.0, next_call - time.monotonic()))
                n += 1
                use_mcp = client is not None and rng.random() < args.mcp_share
                roll = rng.random()
                if roll < 0.35:
                    op, payload = "propose", _content(rng, args.name, n)
                elif roll < 0.75:
                    op, payload = "search", {"query": " ".join(rng.sample(WORDS, 3))}
                elif roll < 0.92 and known:
                    op, payload = "read", {"id": rng.choice(known)}
                elif known:
                    op, payload = "dispute", {"id": rng.choice(known), "reason": f"Stress dispute {args.name}-{n}."}
                else:
                    op, payload = "search", {"query": rng.choice(WORDS)}
                transport = "mcp" if use_mcp else "rest"
                at = time.time()
                started = time.perf_counter()
                try:
                    status, data = await (_mcp_call(client, op, payload) if use_mcp else _rest_call(http, op, payload))
                except Exception as exc:  # a failed request: exactly what the stress test counts
                    status, data = 599, {"message": f"{type(exc).__name__}: {exc}"}
                elapsed = (time.perf_counter() - started) * 1000
                kind = "ok" if status < 400 else ("failed" if status >= 500 else "refused")
                counts[kind] += 1
                item = {
                    "role": "agent",
                    "agent": args.name,
                    "op": f"{op}_{transport}",
                    "status": status,
                    "ms": elapsed,
                    "result": kind,
                    "at": at,
                }
                if kind == "ok" and op in ("propose", "dispute") and data.get("status") == "pending":
                    item["proposal_id"] = data["proposal_id"]
                    item["action"] = data["proposal"]["action"]
                elif kind == "ok" and op == "propose":
                    item["answer"] = data.get("status")  # similar_exists: acknowledged, nothing stored
                if kind == "ok" and op == "search":
                    known.extend(hit["id"] for hit in data.get("results", [])[:3])
                    del known[:-200]
                if kind != "ok":
                    item["message"] = str(data.get("message") or data.get("error") or data)[:300]
                log.write(**item)
        finally:
            if mcp_ctx is not None:
                await mcp_ctx.__aexit__(None, None, None)
    log.write(role="agent", agent=args.name, summary=counts)
    return 0


async def _rest_call(http, op: str, payload: dict):
    if op == "propose":
        response = await http.post("/api/v1/proposals", json=payload)
    elif op == "search":
        response = await http.get("/api/v1/search", params={"q": payload["query"], "limit": 8})
    elif op == "read":
        response = await http.get(f"/api/v1/records/{payload['id']}")
    else:
        response = await http.post(f"/api/v1/records/{payload['id']}/dispute", json={"reason": payload["reason"]})
    try:
        data = response.json()
    except ValueError:
        data = {"message": response.text[:300]}
    if response.status_code == 409 and isinstance(data, dict) and data.get("status") == "similar_exists":
        return 200, data
    return response.status_code, data


async def _mcp_call(client, op: str, payload: dict):
    tool = {"propose": "propose_context", "search": "search", "read": "read", "dispute": "dispute"}[op]
    result = await client.call_tool(tool, payload)
    if result.is_error:
        text = "".join(getattr(block, "text", "") for block in result.content)
        # Domain refusals are tool errors with a [code]; anything else is a failure.
        refused = any(
            f"[{code}]" in text
            for code in (
                "invalid",
                "duplicate",
                "not_found",
                "invalid_transition",
                "rate_limited",
                "limit_reached",
                "space_not_allowed",
            )
        )
        return (409 if refused else 500), {"message": text}
    return 200, result.structured_content


async def run_flood(args) -> int:
    """One agent searching over REST from ``--threads`` concurrent workers,
    back to back, for ``--seconds``. Logs one line per call (status, ms)."""
    import httpx2

    log = Log(Path(args.out))
    deadline = time.monotonic() + args.seconds
    limits = httpx2.Limits(max_connections=args.threads, max_keepalive_connections=args.threads)
    log.write(role="flood", agent=args.name, started=time.time(), threads=args.threads)
    counts = {"ok": 0, "refused": 0, "failed": 0}

    async def worker(http, rng):
        while time.monotonic() < deadline:
            started = time.perf_counter()
            try:
                response = await http.get("/api/v1/search", params={"q": " ".join(rng.sample(WORDS, 3)), "limit": 8})
                status = response.status_code
            except Exception:  # counted as a failure, like the agents' calls
                status = 599
            kind = "ok" if status < 400 else ("failed" if status >= 500 else "refused")
            counts[kind] += 1
            log.write(
                role="flood",
                agent=args.name,
                op="search_flood",
                status=status,
                result=kind,
                ms=(time.perf_counter() - started) * 1000,
                at=time.time(),
            )

    async with httpx2.AsyncClient(
        base_url=args.url, headers={"Authorization": f"Bearer {args.token}"}, timeout=60, limits=limits
    ) as http:
        await asyncio.gather(*(worker(http, random.Random(args.seed + n)) for n in range(args.threads)))
    log.write(role="flood", agent=args.name, summary=counts, ended=time.time())
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.stress")
    sub = parser.add_subparsers(dest="role", required=True)
    agent = sub.add_parser("agent")
    agent.add_argument("--url", required=True)
    agent.add_argument("--token", required=True)
    agent.add_argument("--name", required=True)
    agent.add_argument("--seconds", type=float, required=True)
    agent.add_argument("--out", required=True)
    agent.add_argument("--seed", type=int, default=1)
    agent.add_argument("--mcp-share", type=float, default=0.5, help="share of calls made over MCP")
    agent.add_argument("--interval", type=float, default=0.0, help="seconds between calls (0: back to back)")
    flood = sub.add_parser("flood")
    flood.add_argument("--url", required=True)
    flood.add_argument("--token", required=True)
    flood.add_argument("--name", required=True)
    flood.add_argument("--seconds", type=float, required=True)
    flood.add_argument("--threads", type=int, required=True)
    flood.add_argument("--out", required=True)
    flood.add_argument("--seed", type=int, default=7)
    reviewer = sub.add_parser("reviewer")
    reviewer.add_argument("--reviewer", required=True)
    reviewer.add_argument("--seconds", type=float, required=True)
    reviewer.add_argument("--out", required=True)
    reviewer.add_argument("--seed", type=int, default=2)
    reviewer.add_argument("--via", choices=["actions", "site"], default="actions")
    reviewer.add_argument("--url", default="")
    reviewer.add_argument("--password", default="")
    args = parser.parse_args(argv)
    if args.role == "agent":
        return asyncio.run(run_agent(args))
    if args.role == "flood":
        return asyncio.run(run_flood(args))
    from devtools.stress_reviewer import run_reviewer

    return run_reviewer(args)


if __name__ == "__main__":
    sys.exit(main())
