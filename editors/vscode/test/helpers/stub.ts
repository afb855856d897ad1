// A small stub of the VS Code API parts @desk uses: a chat response stream that records what
// it is given, a chat request with a selected model, and a Host with editors and secrets.
import type * as vscode from "vscode";
import { DeskParticipant, type DeskSettings, type Host } from "../../src/handler";
import { signWithCli, type SignRequest } from "../../src/sign";

export class RecordingStream {
  readonly markdowns: string[] = [];
  readonly buttons: vscode.Command[] = [];
  readonly progresses: string[] = [];
  markdown(value: string | vscode.MarkdownString): void {
    this.markdowns.push(typeof value === "string" ? value : value.value);
  }
  button(command: vscode.Command): void {
    this.buttons.push(command);
  }
  progress(value: string): void {
    this.progresses.push(value);
  }
  anchor(): void {}
  reference(): void {}
  filetree(): void {}
  push(): void {}
  get text(): string {
    return this.markdowns.join("");
  }
}

/** A chat model that answers `text` and records the prompts it was sent. */
export class StubModel {
  readonly name = "Stub model";
  readonly id = "stub";
  readonly prompts: string[] = [];
  constructor(
    private readonly text: string,
    private readonly failure?: Error,
  ) {}
  async sendRequest(messages: { content: string }[]): Promise<{ text: AsyncIterable<string> }> {
    this.prompts.push(...messages.map((m) => m.content));
    if (this.failure) throw this.failure;
    const text = this.text;
    async function* fragments(): AsyncIterable<string> {
      for (const part of text.match(/.{1,7}/gs) ?? []) yield part;
    }
    return { text: fragments() };
  }
}

export class StubHost implements Host {
  readonly drafts = new Map<number, string>();
  readonly signed: SignRequest[] = [];
  /** The active editor's text, when no draft editor is open for the ticket. */
  activeEditor: string | undefined;
  reason: string | undefined;
  constructor(
    public deskSettings: DeskSettings,
    public desk: string | undefined,
    public github: string | undefined,
  ) {}
  settings(): DeskSettings {
    return this.deskSettings;
  }
  deskToken(): Promise<string | undefined> {
    return Promise.resolve(this.desk);
  }
  githubToken(): Promise<string | undefined> {
    return Promise.resolve(this.github);
  }
  openDraft(ticket: number, text: string): Promise<void> {
    this.drafts.set(ticket, text);
    return Promise.resolve();
  }
  editorText(ticket: number): string | undefined {
    return this.drafts.get(ticket) ?? this.activeEditor;
  }
  askReason(): Promise<string | undefined> {
    return Promise.resolve(this.reason);
  }
  /** Sign as the extension does (`ticketproxy sign`), recording what was signed. */
  sign(cli: string, keyPath: string, request: SignRequest): Promise<string> {
    this.signed.push(request);
    return signWithCli(cli, keyPath, request);
  }
  userMessage(text: string): vscode.LanguageModelChatMessage {
    return { role: 1, content: text, name: undefined } as unknown as vscode.LanguageModelChatMessage;
  }
}

const NEVER_CANCELLED = {
  isCancellationRequested: false,
  onCancellationRequested: () => ({ dispose() {} }),
} as unknown as vscode.CancellationToken;

export interface Turn {
  stream: RecordingStream;
  result: vscode.ChatResult;
  followups: vscode.ChatFollowup[];
}

/** Send `@desk /command prompt` to the participant, as VS Code would. */
export async function chat(
  participant: DeskParticipant,
  command: string | undefined,
  prompt: string,
  model: StubModel = new StubModel(""),
): Promise<Turn> {
  const stream = new RecordingStream();
  const request = { prompt, command, references: [], toolReferences: [], model } as unknown as vscode.ChatRequest;
  const context = { history: [] } as unknown as vscode.ChatContext;
  const result = (await participant.handle(
    request,
    context,
    stream as unknown as vscode.ChatResponseStream,
    NEVER_CANCELLED,
  )) as vscode.ChatResult;
  const followups = (await participant.followupProvider.provideFollowups(result, context, NEVER_CANCELLED)) ?? [];
  return { stream, result, followups };
}
