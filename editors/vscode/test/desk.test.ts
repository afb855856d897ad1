// @desk's handler driven through the VS Code stub against a real `ticketproxy serve` on the
// embedded GitHub: what the chat shows, what it signs, and what the agent then receives.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { DeskClient } from "../src/desk";
import { DeskParticipant, type DeskSettings } from "../src/handler";
import { addUser, askAsAgent, closedPort, DESK_TOKEN, startStack, type AgentRequest, type Person, type Stack } from "./helpers/stack";
import { chat, StubHost, StubModel } from "./helpers/stub";
import { PendingCount } from "../src/watch";

const SHELL_TOOL = {
  type: "function" as const,
  function: {
    name: "execute_shell",
    description: "Run a shell command.",
    parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
  },
};

let stack: Stack;
let bob: Person;
const agents: AgentRequest[] = [];

function settings(overrides: Partial<DeskSettings> = {}): DeskSettings {
  return { deskUrl: stack.url, githubHost: "", githubApiUrl: "", keyPath: stack.alice.key, cliPath: "ticketproxy", ...overrides };
}

function editor(person: Person = stack.alice): { host: StubHost; desk: DeskParticipant } {
  const host = new StubHost(settings({ keyPath: person.key }), DESK_TOKEN, person.token);
  return { host, desk: new DeskParticipant(host) };
}

/** An agent asks `question`; return its request and the number of the ticket it opened. */
async function ask(question: string, tools = [] as (typeof SHELL_TOOL)[]): Promise<{ agent: AgentRequest; number: number }> {
  const agent = askAsAgent(stack, question, tools);
  agents.push(agent);
  const client = new DeskClient(stack.url, DESK_TOKEN);
  for (let i = 0; i < 100; i++) {
    const found = (await client.tickets()).find((t) => t.title.includes(question));
    if (found) return { agent, number: found.number };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no ticket for ${question}; the server logged:\n${stack.log()}`);
}

async function state(number: number): Promise<string> {
  return (await new DeskClient(stack.url, DESK_TOKEN).ticket(number)).state;
}

/** Wait until the desk has taken a posted comment and the ticket is in state `wanted`. */
async function reaches(number: number, wanted: string): Promise<void> {
  for (let i = 0; i < 100 && (await state(number)) !== wanted; i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(await state(number), wanted);
}

before(async () => {
  stack = await startStack();
  bob = await addUser(stack, "bob", "reviewer");
});

after(async () => {
  agents.forEach((a) => a.abort());
  await stack?.stop();
});

describe("@desk against a real ticketproxy serve", () => {
  it("/list shows the pending tickets with a button each", async () => {
    const { number } = await ask("List me: what is the time?");
    const { desk } = editor();
    const turn = await chat(desk, "list", "");
    assert.match(turn.stream.text, new RegExp(`\\*\\*#${number}\\*\\* List me: what is the time\\?`));
    const button = turn.stream.buttons.find((b) => b.arguments?.[0] === number);
    assert.ok(button, "a button opens the ticket");
    assert.equal(button.command, "ticketproxy.showTicket");
    assert.ok(turn.followups.some((f) => f.command === "next"), "next ticket is offered");
  });

  it("/show gives the newest message first, the tools and the template, and offers sign and post", async () => {
    const { number } = await ask("Show me: clean the build folder", [SHELL_TOOL]);
    const { desk } = editor();
    const turn = await chat(desk, "show", `#${number}`);
    const text = turn.stream.text;
    assert.ok(text.indexOf("Newest message") < text.indexOf("Tools (1)"));
    assert.ok(text.indexOf("Tools (1)") < text.indexOf("Answer template"));
    assert.match(text, /Show me: clean the build folder/);
    assert.match(text, /"command"/);
    assert.match(text, /tool_call/);
    const labels = turn.followups.map((f) => f.label);
    assert.deepEqual(labels, ["Sign and post the editor's text", "Draft an answer", "Next ticket"]);
    assert.deepEqual(turn.followups[0], { prompt: `#${number}`, label: "Sign and post the editor's text", command: "answer" });
  });

  it("/draft asks the selected model and opens its text in an editor, posting nothing", async () => {
    const { number } = await ask("Draft me: say hello");
    const { host, desk } = editor();
    const model = new StubModel("Hello from the model.");
    const turn = await chat(desk, "draft", `${number}`, model);
    assert.equal(host.drafts.get(number), "Hello from the model.");
    assert.match(model.prompts[0]!, /Draft me: say hello/);
    assert.match(turn.stream.text, /Nothing is signed or posted yet/);
    assert.equal(await state(number), "open");
    assert.equal(turn.followups[0]?.command, "answer");
  });

  it("/answer signs the editor's text, not the model's draft, and the agent receives it", async () => {
    const { agent, number } = await ask("Answer me: what is two and two?");
    const { host, desk } = editor();
    await chat(desk, "draft", `#${number}`, new StubModel("Five, says the model."));
    host.drafts.set(number, "Four, says the human who read the draft.");
    const turn = await chat(desk, "answer", `#${number}`);
    assert.match(turn.stream.text, /Signed and posted as \*\*alice\*\*/);
    const completion = await agent.completion;
    assert.equal(completion.choices[0]?.message.content, "Four, says the human who read the draft.");
    assert.ok(turn.followups.some((f) => f.command === "next"));
  });

  it("an answer held for review shows the rule that matched, and /approve releases the tool call", async () => {
    const { agent, number } = await ask("Approve me: remove the build folder", [SHELL_TOOL]);
    const alice = editor();
    alice.host.activeEditor = '```tool_call\n{"name": "execute_shell", "arguments": {"command": "rm -rf build"}}\n```';
    await chat(alice.desk, "answer", `#${number}`);
    await reaches(number, "needs-review");
    const reviewer = editor(bob);
    const shown = await chat(reviewer.desk, "show", `#${number}`);
    assert.match(shown.stream.text, /rule \*\*shell and code execution\*\*/);
    assert.match(shown.stream.text, /execute_shell \{"command": "rm -rf build"\}/);
    assert.deepEqual(shown.followups.map((f) => f.label), ["Approve", "Reject with reason", "Next ticket"]);
    const approved = await chat(reviewer.desk, "approve", `#${number}`);
    assert.match(approved.stream.text, /Approved #\d+ as \*\*bob\*\*/);
    const call = (await agent.completion).choices[0]?.message.tool_calls?.[0];
    assert.ok(call && call.type === "function");
    assert.equal(call.function.name, "execute_shell");
    assert.deepEqual(JSON.parse(call.function.arguments), { command: "rm -rf build" });
  });

  it("/reject asks for a reason, drops the held answer, and the ticket waits again", async () => {
    const { number } = await ask("Reject me: wipe the disk", [SHELL_TOOL]);
    const alice = editor();
    alice.host.activeEditor = '```tool_call\n{"name": "execute_shell", "arguments": {"command": "rm -rf /"}}\n```';
    await chat(alice.desk, "answer", `#${number}`);
    await reaches(number, "needs-review");
    const reviewer = editor(bob);
    reviewer.host.reason = "Deletes everything";
    const rejected = await chat(reviewer.desk, "reject", `#${number}`);
    assert.match(rejected.stream.text, /Rejected #\d+ as \*\*bob\*\*/);
    await reaches(number, "open");
    assert.equal((await new DeskClient(stack.url, DESK_TOKEN).ticket(number)).review, null);
  });

  // Nothing is signed from an empty editor, and the ticket stays open.
  it("test_answer_with_an_empty_editor_is_refused", async () => {
    const { number } = await ask("Empty me: anything?");
    const { host, desk } = editor();
    host.activeEditor = "  \n";
    const turn = await chat(desk, "answer", `#${number}`);
    assert.match(turn.stream.text, /no answer in the editor/);
    assert.equal(host.signed.length, 0);
    assert.equal(await state(number), "open");
  });

  // A reviewer without the editor role cannot answer: the desk's verifier reason reaches the chat.
  it("test_answer_by_a_key_without_the_editor_role_is_refused", async () => {
    const { number } = await ask("Role me: rm the cache");
    const { host, desk } = editor(bob);
    host.activeEditor = "plain text";
    const turn = await chat(desk, "answer", `#${number}`);
    assert.match(turn.stream.text, /Could not answer:\*\* the desk answered 422: .*\(role_missing\)/s);
    assert.equal(await state(number), "open");
  });

  // The author of a held answer cannot approve it: refused before posting, nothing is released.
  it("test_self_approval_is_refused", async () => {
    const { number } = await ask("Self me: remove the logs", [SHELL_TOOL]);
    const alice = editor();
    alice.host.activeEditor = '```tool_call\n{"name": "execute_shell", "arguments": {"command": "rm -rf logs"}}\n```';
    await chat(alice.desk, "answer", `#${number}`);
    await reaches(number, "needs-review");
    const turn = await chat(alice.desk, "approve", `#${number}`);
    assert.match(turn.stream.text, /Could not approve:\*\* your key is alice's, who wrote the held answer/);
    assert.match(turn.stream.text, /Nothing was posted/);
    assert.equal(await state(number), "needs-review");
  });

  // /approve on a ticket that holds no answer is refused before anything is signed.
  it("test_approval_of_a_ticket_holding_no_answer_is_refused", async () => {
    const { number } = await ask("Nothing held: hello?");
    const { host, desk } = editor(bob);
    const turn = await chat(desk, "approve", `#${number}`);
    assert.match(turn.stream.text, /is open: it takes answer now, not approve/);
    assert.equal(host.signed.length, 0);
  });

  // A rejection with no reason given (the input box dismissed) is not signed.
  it("test_rejection_without_a_reason_is_refused", async () => {
    const { number } = await ask("No reason: delete tmp", [SHELL_TOOL]);
    const alice = editor();
    alice.host.activeEditor = '```tool_call\n{"name": "execute_shell", "arguments": {"command": "rm -rf tmp"}}\n```';
    await chat(alice.desk, "answer", `#${number}`);
    await reaches(number, "needs-review");
    const reviewer = editor(bob);
    reviewer.host.reason = undefined;
    const turn = await chat(reviewer.desk, "reject", `#${number}`);
    assert.match(turn.stream.text, /a rejection needs a reason/);
    assert.equal(reviewer.host.signed.length, 0);
    assert.equal(await state(number), "needs-review");
  });

  // A chat model that refuses (no consent, no quota) is told, and no editor is opened.
  it("test_chat_model_refusing_a_draft_is_told_in_the_chat", async () => {
    const { number } = await ask("No model: greet me");
    const { host, desk } = editor();
    const turn = await chat(desk, "draft", `#${number}`, new StubModel("", new Error("user consent not given")));
    assert.match(turn.stream.text, /the chat model Stub model gave no draft \(user consent not given\)/);
    assert.equal(host.drafts.size, 0);
  });

  // The desk being down is told in the chat, with what to check.
  it("test_desk_unreachable_is_told_in_the_chat", async () => {
    const port = await closedPort();
    const host = new StubHost(settings({ deskUrl: `http://127.0.0.1:${port}` }), DESK_TOKEN, "t");
    const turn = await chat(new DeskParticipant(host), "list", "");
    assert.match(turn.stream.text, /cannot reach the desk at http:\/\/127\.0\.0\.1:\d+\/desk\/api\/v1 \(ECONNREFUSED\)/);
    assert.deepEqual(turn.followups.map((f) => f.command), ["list"]);
  });

  // A wrong desk token is told as such, with the command that sets it.
  it("test_wrong_desk_token_is_told_in_the_chat", async () => {
    const host = new StubHost(settings(), "not-the-desk-token-at-all", "t");
    const turn = await chat(new DeskParticipant(host), "list", "");
    assert.match(turn.stream.text, /the desk refused its token/);
    assert.match(turn.stream.text, /Set desk token/);
  });

  // With no GitHub token stored nothing is signed, and the chat names the command to set one.
  it("test_missing_github_token_is_told_in_the_chat", async () => {
    const { number } = await ask("Tokenless: greet me");
    const host = new StubHost(settings(), DESK_TOKEN, undefined);
    host.activeEditor = "Hello";
    const turn = await chat(new DeskParticipant(host), "answer", `#${number}`);
    assert.match(turn.stream.text, /no GitHub token.*Set GitHub token/);
    assert.equal(host.signed.length, 0);
  });

  // A desk that posts to another GitHub API than the token's is not given the token.
  it("test_token_for_another_github_api_is_not_sent", async () => {
    const { number } = await ask("Elsewhere me: hello?");
    const host = new StubHost(settings({ githubApiUrl: "https://api.github.com" }), DESK_TOKEN, stack.alice.token);
    host.activeEditor = "Hello";
    const turn = await chat(new DeskParticipant(host), "answer", `#${number}`);
    assert.match(turn.stream.text, /the desk posts to http:\/\/127\.0\.0\.1:\d+\/api\/v3/);
    assert.equal(host.signed.length, 0);
    assert.equal(await state(number), "open");
  });

  // A ticket on another GitHub host than the configured one is not answered with the token.
  it("test_ticket_on_another_github_host_gets_no_token", async () => {
    const { number } = await ask("Other host: hello?");
    const host = new StubHost(settings({ githubHost: "https://github.com" }), DESK_TOKEN, stack.alice.token);
    host.activeEditor = "Hello";
    const turn = await chat(new DeskParticipant(host), "answer", `#${number}`);
    assert.match(turn.stream.text, /not on https:\/\/github\.com \(ticketproxy\.githubHost\)/);
    assert.equal(host.signed.length, 0);
  });

  // A key path that does not exist is told as `ticketproxy sign` tells it, and nothing is posted.
  it("test_unreadable_signing_key_is_told_in_the_chat", async () => {
    const { number } = await ask("Bad key: hello?");
    const host = new StubHost(settings({ keyPath: "/nonexistent/alice.key" }), DESK_TOKEN, stack.alice.token);
    host.activeEditor = "Hello";
    const turn = await chat(new DeskParticipant(host), "answer", `#${number}`);
    assert.match(turn.stream.text, /`ticketproxy sign` failed: .*alice\.key/s);
    assert.equal(await state(number), "open");
  });

  // A ticketproxy command that is not installed is told, with the setting to fix.
  it("test_missing_ticketproxy_command_is_told_in_the_chat", async () => {
    const { number } = await ask("No cli: hello?");
    const host = new StubHost(settings({ cliPath: "/nonexistent/ticketproxy" }), DESK_TOKEN, stack.alice.token);
    host.activeEditor = "Hello";
    const turn = await chat(new DeskParticipant(host), "answer", `#${number}`);
    assert.match(turn.stream.text, /cannot run `\/nonexistent\/ticketproxy`.*ticketproxy\.cliPath/);
  });
});

/** Wait until `done()` holds, or fail saying what was shown. */
async function until(done: () => boolean, what: () => string): Promise<void> {
  for (let i = 0; i < 100 && !done(); i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(done(), what());
}

describe("the status bar's pending count", () => {
  // The count follows the desk's event stream: a new ticket is counted without a /list.
  it("test_pending_count_refreshes_itself_when_a_ticket_opens", async () => {
    const shown: (number | null)[] = [];
    const counter = new PendingCount(() => settings(), () => Promise.resolve(DESK_TOKEN), (count) => shown.push(count));
    const stop = counter.start();
    try {
      await until(() => shown.length > 0, () => "no count after the stream's ready event");
      const before = shown.at(-1);
      assert.equal(typeof before, "number");
      await ask("Count me: am I pending?");
      await until(() => shown.at(-1) === (before as number) + 1, () => `shown ${JSON.stringify(shown)}`);
    } finally {
      stop();
    }
  });

  // A desk that cannot be reached shows no count, with why, rather than a stale number.
  it("test_unreachable_desk_shows_no_count", async () => {
    const tips: string[] = [];
    const url = `http://127.0.0.1:${await closedPort()}`;
    const counter = new PendingCount(() => settings({ deskUrl: url }), () => Promise.resolve(undefined), (count, tip) => {
      assert.equal(count, null);
      tips.push(tip);
    }, 50);
    const stop = counter.start();
    try {
      await until(() => tips.length > 0, () => "nothing shown");
      assert.match(tips[0]!, /no events from .*ECONNREFUSED/);
    } finally {
      stop();
    }
  });

  // A wrong desk token gets no events: the count says the stream was refused.
  it("test_wrong_desk_token_shows_no_count", async () => {
    const tips: string[] = [];
    const counter = new PendingCount(() => settings(), () => Promise.resolve("not-the-desk-token"), (count, tip) => {
      assert.equal(count, null);
      tips.push(tip);
    }, 50);
    const stop = counter.start();
    try {
      await until(() => tips.length > 0, () => "nothing shown");
      assert.match(tips[0]!, /answered 403/);
    } finally {
      stop();
    }
  });
});
