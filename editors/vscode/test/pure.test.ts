// The pure parts: follow-ups, fences around agent text, and the desk URL.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { apiBase } from "../src/desk";
import { followupsFor } from "../src/handler";
import { fenced } from "../src/render";
import { signArguments, signerOf } from "../src/sign";
import { parseEvents } from "../src/watch";

describe("pure parts", () => {
  it("test_event_split_across_chunks_is_read_once_whole: events, heartbeats and the unfinished rest", () => {
    const first = parseEvents(': heartbeat\n\nevent: ready\ndata: {"repo": "acme/agents"}\n\nevent: ticket.opened\ndata: {"num');
    assert.deepEqual(first.events, [{ event: "ready", data: { repo: "acme/agents" } }]);
    const second = parseEvents(first.rest + 'ber": 12}\r\n\r\n');
    assert.deepEqual(second.events, [{ event: "ticket.opened", data: { number: 12 } }]);
    assert.equal(second.rest, "");
  });

  it("test_agent_text_cannot_close_its_fence: a longer fence wraps backticks in agent text", () => {
    const text = "```\n[click](https://evil.example)\n````";
    const out = fenced(text);
    assert.ok(out.startsWith("`````text\n"));
    assert.ok(out.endsWith("\n`````\n"));
  });

  it("follow-ups: sign and post and next ticket on an open ticket, approve and reject on a held one", () => {
    assert.deepEqual(
      followupsFor({ command: "show", ticket: 3, acts: ["answer"] }).map((f) => f.command),
      ["answer", "draft", "next"],
    );
    const held = followupsFor({ command: "show", ticket: 3, acts: ["approve", "reject"] });
    assert.deepEqual(held.map((f) => f.label), ["Approve", "Reject with reason", "Next ticket"]);
    assert.deepEqual(followupsFor({ command: "list", error: "x" }).map((f) => f.command), ["list"]);
  });

  it("the desk URL may be the server's, its page's or its API's", () => {
    for (const url of ["http://h:1", "http://h:1/", "http://h:1/desk/", "http://h:1/desk/api/v1"]) {
      assert.equal(apiBase(url), "http://h:1/desk/api/v1");
    }
  });

  it("the signer is read from the signature's claims", () => {
    const claims = Buffer.from(JSON.stringify({ sub: "bob", act: "approve" })).toString("base64url");
    assert.equal(signerOf(`Approved.\n\n<!-- ticketproxy-signature: eyJh.${claims}.c2ln -->`), "bob");
    assert.equal(signerOf("Approved."), undefined);
  });

  it("a judgement is signed with the judged answer's digest, text on stdin", () => {
    assert.deepEqual(signArguments({ text: "x", ticket: "a/b#1", act: "approve", judgedSha256: "ab" }, "k.key"), [
      "sign", "--ticket", "a/b#1", "--key", "k.key", "--act", "approve", "--judged-sha256", "ab", "-",
    ]);
  });
});

describe("ticket numbers in prompts", () => {
  it("a reason's own numbers are not taken for the ticket's", async () => {
    const { DeskParticipant } = await import("../src/handler");
    const participant = new DeskParticipant({} as never) as unknown as { ticketNumber(p: string): number; current?: number };
    assert.equal(participant.ticketNumber("#12 deletes 3 files"), 12);
    participant.current = 7;
    assert.equal(participant.ticketNumber("deletes 3 files"), 7);
  });
});
