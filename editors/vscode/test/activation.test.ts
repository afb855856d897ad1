// The extension's entry point loaded with a stub `vscode` module: what it registers must match
// what package.json contributes (participant id, commands, settings).
import assert from "node:assert/strict";
import Module from "node:module";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";

const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "package.json"), "utf-8")) as {
  main: string;
  contributes: {
    chatParticipants: { id: string; name: string }[];
    commands: { command: string }[];
    configuration: { properties: Record<string, unknown> };
  };
};

type Handler = (request: unknown, context: unknown, stream: unknown, token: unknown) => Promise<unknown>;

interface Recorded {
  participants: { id: string; handler: Handler; followupProvider?: unknown }[];
  commands: string[];
  settingsRead: string[];
  statusItems: { text: string; dispose(): void }[];
}

function stubVscode(recorded: Recorded): unknown {
  return {
    chat: {
      createChatParticipant(id: string, handler: Handler) {
        const participant = { id, handler, dispose() {} };
        recorded.participants.push(participant);
        return participant;
      },
    },
    commands: {
      registerCommand(command: string) {
        recorded.commands.push(command);
        return { dispose() {} };
      },
    },
    workspace: {
      getConfiguration(section: string) {
        return { get: (key: string, fallback: unknown) => (recorded.settingsRead.push(`${section}.${key}`), fallback) };
      },
    },
    window: {
      createStatusBarItem() {
        const item = { text: "", tooltip: "", command: undefined as unknown, show() {}, dispose() {} };
        recorded.statusItems.push(item);
        return item;
      },
    },
    StatusBarAlignment: { Left: 1, Right: 2 },
    LanguageModelChatMessage: { User: (text: string) => ({ content: text }) },
  };
}

/** Load `main` with `require("vscode")` answered by the stub. */
function loadWithStub(recorded: Recorded): { activate(context: unknown): void } {
  const loader = Module as unknown as { _load(request: string, ...rest: unknown[]): unknown };
  const original = loader._load;
  loader._load = function (request: string, ...rest: unknown[]) {
    return request === "vscode" ? stubVscode(recorded) : original.call(this, request, ...rest);
  };
  try {
    return require(join(__dirname, "..", "..", manifest.main)) as { activate(context: unknown): void };
  } finally {
    loader._load = original;
  }
}

describe("activation", () => {
  it("registers the participant, the commands and reads the settings package.json declares", async () => {
    const recorded: Recorded = { participants: [], commands: [], settingsRead: [], statusItems: [] };
    const extension = loadWithStub(recorded);
    const context = { subscriptions: [] as { dispose(): void }[], secrets: { get: async () => undefined } };
    extension.activate(context);
    assert.equal(recorded.statusItems.length, 1, "one status bar item: the pending count");
    assert.deepEqual(recorded.participants.map((p) => p.id), manifest.contributes.chatParticipants.map((p) => p.id));
    assert.ok(recorded.participants[0]?.followupProvider, "follow-ups are provided");
    assert.deepEqual(recorded.commands.sort(), manifest.contributes.commands.map((c) => c.command).sort());
    assert.equal(manifest.contributes.chatParticipants[0]?.name, "desk");
    // The participant, the commands, and the pending count (its item and its event stream).
    assert.equal(context.subscriptions.length, 2 + recorded.commands.length);
    // The settings are read when a request comes: every one declared, and no other.
    const said: string[] = [];
    await recorded.participants[0]!.handler({ prompt: "", command: undefined }, { history: [] }, { markdown: (m: string) => said.push(m) }, {});
    assert.match(said.join(""), /\/answer 12/);
    assert.deepEqual([...new Set(recorded.settingsRead)].sort(), Object.keys(manifest.contributes.configuration.properties).sort());
    context.subscriptions.forEach((s) => s.dispose()); // stops the pending count's event stream
  });
});
