// The @desk chat participant's logic, written against the few VS Code parts it needs (the chat
// request, its response stream, the selected model) and a Host for the rest, so the tests drive
// it with a stub of those and a real `ticketproxy serve`.
import type * as vscode from "vscode";
import { DeskClient, DeskError, type TicketDetail } from "./desk";
import { draftPrompt, fenced, listMarkdown, plain, reviewMarkdown, ticketMarkdown } from "./render";
import { SignError, signerOf, signWithCli, type SignRequest } from "./sign";

export interface DeskSettings {
  deskUrl: string;
  /** The GitHub web host the tickets are on; empty: not checked. */
  githubHost: string;
  /** The GitHub API the editor's token belongs to; empty: not checked. */
  githubApiUrl: string;
  keyPath: string;
  cliPath: string;
}

/** What the handler asks of VS Code beyond the chat request itself. */
export interface Host {
  settings(): DeskSettings;
  deskToken(): Promise<string | undefined>;
  githubToken(): Promise<string | undefined>;
  /** Open `text` in an editor for the human to change before `/answer`. */
  openDraft(ticket: number, text: string): Promise<void>;
  /** The text the human sees for this ticket: its draft editor, else the active editor. */
  editorText(ticket: number): string | undefined;
  askReason(ticket: number): Promise<string | undefined>;
  userMessage(text: string): vscode.LanguageModelChatMessage;
  sign?(cli: string, keyPath: string, request: SignRequest): Promise<string>;
}

export interface DeskResultMetadata {
  command: string;
  ticket?: number;
  acts?: string[];
  error?: string;
}

export const PARTICIPANT_ID = "ticketproxy.desk";
export const SHOW_COMMAND = "ticketproxy.showTicket";

/** A refusal the handler tells the human (no ticket, nothing in the editor, ...). */
class Refusal extends Error {}

export class DeskParticipant {
  /** The ticket `/show` last opened: the one the next command acts on when it names none. */
  private current: number | undefined;

  constructor(private readonly host: Host) {}

  readonly handle = async (
    request: vscode.ChatRequest,
    _context: vscode.ChatContext,
    stream: vscode.ChatResponseStream,
    token: vscode.CancellationToken,
  ): Promise<vscode.ChatResult> => {
    const command = request.command ?? "help";
    try {
      const metadata = await this.dispatch(command, request, stream, token);
      return { metadata };
    } catch (error) {
      if (error instanceof DeskError || error instanceof SignError || error instanceof Refusal) {
        stream.markdown(`**Could not ${command}:** ${error.message}\n`);
        return { metadata: { command, error: error.message } satisfies DeskResultMetadata };
      }
      throw error;
    }
  };

  readonly followupProvider: vscode.ChatFollowupProvider = {
    provideFollowups: (result) => followupsFor(result.metadata as DeskResultMetadata | undefined),
  };

  private async dispatch(
    command: string,
    request: vscode.ChatRequest,
    stream: vscode.ChatResponseStream,
    token: vscode.CancellationToken,
  ): Promise<DeskResultMetadata> {
    const desk = await this.desk();
    switch (command) {
      case "list":
        return this.list(desk, stream);
      case "show":
        return this.show(desk, this.ticketNumber(request.prompt), stream);
      case "next":
        return this.next(desk, request.prompt, stream);
      case "draft":
        return this.draft(desk, this.ticketNumber(request.prompt), request.model, stream, token);
      case "answer":
        return this.answer(desk, this.ticketNumber(request.prompt), stream);
      case "approve":
        return this.judge(desk, "approve", request.prompt, stream);
      case "reject":
        return this.judge(desk, "reject", request.prompt, stream);
      default:
        stream.markdown(HELP);
        return { command: "help" };
    }
  }

  private async desk(): Promise<DeskClient> {
    return new DeskClient(this.host.settings().deskUrl, await this.host.deskToken());
  }

  /** The ticket a prompt names first (`12`, `#12`), else the one shown last. */
  private ticketNumber(prompt: string): number {
    const named = /^\s*#?(\d+)\b/.exec(prompt);
    const number = named ? Number(named[1]) : this.current;
    if (number === undefined) {
      throw new Refusal("name a ticket (`#12`), or open one first with `/show 12` or `/list`.");
    }
    return number;
  }

  private async list(desk: DeskClient, stream: vscode.ChatResponseStream): Promise<DeskResultMetadata> {
    const entries = await desk.tickets();
    stream.markdown(listMarkdown(entries));
    for (const entry of entries) {
      stream.button({
        command: SHOW_COMMAND,
        title: `#${entry.number} ${entry.title}`.slice(0, 80),
        arguments: [entry.number],
      });
    }
    return { command: "list", ticket: entries[0]?.number };
  }

  private async show(
    desk: DeskClient,
    number: number,
    stream: vscode.ChatResponseStream,
  ): Promise<DeskResultMetadata> {
    const ticket = await desk.ticket(number);
    this.current = number;
    stream.markdown(ticketMarkdown(ticket));
    stream.markdown("\n" + nextSteps(ticket));
    return { command: "show", ticket: number, acts: ticket.signing.acts };
  }

  private async next(
    desk: DeskClient,
    prompt: string,
    stream: vscode.ChatResponseStream,
  ): Promise<DeskResultMetadata> {
    const after = /#?(\d+)/.exec(prompt);
    const from = after ? Number(after[1]) : this.current ?? 0;
    const entries = await desk.tickets();
    const next = entries.find((e) => e.number > from) ?? entries.find((e) => e.number !== from);
    if (!next) {
      stream.markdown("No other pending ticket.\n");
      return { command: "next" };
    }
    return { ...(await this.show(desk, next.number, stream)), command: "next" };
  }

  private async draft(
    desk: DeskClient,
    number: number,
    model: vscode.LanguageModelChat,
    stream: vscode.ChatResponseStream,
    token: vscode.CancellationToken,
  ): Promise<DeskResultMetadata> {
    const ticket = await desk.ticket(number);
    this.current = number;
    requireAct(ticket, "answer");
    stream.progress(`Asking ${model.name} for a draft of #${number}…`);
    let text = "";
    try {
      const response = await model.sendRequest([this.host.userMessage(draftPrompt(ticket))], {}, token);
      for await (const fragment of response.text) {
        text += fragment;
      }
    } catch (error) {
      // No consent, no quota, no such model: VS Code's LanguageModelError, told as it is.
      const why = error instanceof Error ? error.message : String(error);
      throw new Refusal(`the chat model ${model.name} gave no draft (${why}); write the answer yourself.`);
    }
    await this.host.openDraft(number, text);
    stream.markdown(
      `The draft for #${number} is open in an editor. Read it and change what needs changing; ` +
        "`/answer` then signs **the editor's text** and posts it. Nothing is signed or posted yet.\n",
    );
    return { command: "draft", ticket: number, acts: ticket.signing.acts };
  }

  private async answer(
    desk: DeskClient,
    number: number,
    stream: vscode.ChatResponseStream,
  ): Promise<DeskResultMetadata> {
    const ticket = await desk.ticket(number);
    requireAct(ticket, "answer");
    const text = this.host.editorText(number);
    if (text === undefined || !text.trim()) {
      throw new Refusal(
        `no answer in the editor for #${number}: write it in an editor (\`/draft\` opens one), ` +
          "then `/answer` again.",
      );
    }
    const posted = await this.signAndPost(desk, ticket, { text, ticket: ticket.signing.ticket, act: "answer" });
    stream.markdown(
      `Signed and posted as **${plain(posted.signer)}**: ${posted.comment.url}\n\n` +
        `The text signed (sha256 \`${posted.sha256}\`):\n\n` +
        fenced(text, "markdown"),
    );
    return { command: "answer", ticket: number, acts: [] };
  }

  private async judge(
    desk: DeskClient,
    act: "approve" | "reject",
    prompt: string,
    stream: vscode.ChatResponseStream,
  ): Promise<DeskResultMetadata> {
    const number = this.ticketNumber(prompt);
    const ticket = await desk.ticket(number);
    requireAct(ticket, act);
    const review = ticket.review;
    const digest = ticket.signing.answer_sha256;
    if (!review || !digest) {
      throw new Refusal(`no answer is held for review on #${number}.`);
    }
    const about = `the answer ${review.comment_url} (sha256 ${digest})`;
    let note = `Approved ${about} after review.`;
    if (act === "reject") {
      const given = prompt.replace(/^\s*#?\d+\s*/, "").trim();
      const reason = given || (await this.host.askReason(number))?.trim();
      if (!reason) {
        throw new Refusal(`a rejection needs a reason: \`/reject ${number} <why>\`.`);
      }
      note = `Rejected ${about}: ${reason}`;
    }
    const posted = await this.signAndPost(desk, ticket, {
      text: note,
      ticket: ticket.signing.ticket,
      act,
      judgedSha256: digest,
    });
    stream.markdown(
      `${act === "approve" ? "Approved" : "Rejected"} #${number} as **${plain(posted.signer)}**: ` +
        `${posted.comment.url}\n\n` +
        reviewMarkdown(ticket),
    );
    return { command: act, ticket: number, acts: [] };
  }

  private async signAndPost(desk: DeskClient, ticket: TicketDetail, request: SignRequest) {
    const settings = this.host.settings();
    const githubToken = await this.host.githubToken();
    if (!githubToken) {
      throw new Refusal("no GitHub token: set yours with the command “ticketproxy: Set GitHub token”.");
    }
    if (settings.githubHost && !sameOrigin(ticket.url, settings.githubHost)) {
      throw new Refusal(
        `#${ticket.number} is on ${ticket.url}, not on ${settings.githubHost} ` +
          "(ticketproxy.githubHost): your GitHub token is not sent for it.",
      );
    }
    if (settings.githubApiUrl) {
      const config = await desk.config();
      if (sameUrl(config.github_api_url, settings.githubApiUrl) === false) {
        throw new Refusal(
          `the desk posts to ${config.github_api_url}, but your GitHub token is set for ` +
            `${settings.githubApiUrl} (ticketproxy.githubApiUrl): it is not sent elsewhere.`,
        );
      }
    }
    const body = this.host.sign
      ? await this.host.sign(settings.cliPath, settings.keyPath, request)
      : await signWithCli(settings.cliPath, settings.keyPath, request);
    const signer = signerOf(body);
    if (request.act !== "answer" && signer !== undefined && signer === ticket.review?.signer) {
      throw new Refusal(
        `your key is ${signer}'s, who wrote the held answer: its author cannot ${request.act} it; ` +
          "another reviewer must. Nothing was posted.",
      );
    }
    return desk.postComment(ticket.number, body, githubToken);
  }
}

function requireAct(ticket: TicketDetail, act: string): void {
  if (!ticket.signing.acts.includes(act)) {
    const takes = ticket.signing.acts.length ? ticket.signing.acts.join(", ") : "nothing";
    throw new Refusal(`#${ticket.number} is ${ticket.state}: it takes ${takes} now, not ${act}.`);
  }
}

function sameUrl(a: string, b: string): boolean {
  const norm = (url: string) => url.trim().replace(/\/+$/, "").toLowerCase();
  return norm(a) === norm(b);
}

function sameOrigin(url: string, host: string): boolean {
  try {
    return new URL(url).origin === new URL(host).origin;
  } catch {
    return false;
  }
}

function nextSteps(ticket: TicketDetail): string {
  const acts = ticket.signing.acts;
  if (acts.includes("answer")) {
    return "`/draft` asks your chat model for a draft in an editor; `/answer` signs and posts the editor's text.\n";
  }
  if (acts.includes("approve")) {
    return "`/approve` releases the held answer; `/reject <reason>` drops it.\n";
  }
  return "This ticket takes no comment now.\n";
}

/** Pure: the follow-ups after a result (sign and post, next ticket, reject with reason). */
export function followupsFor(metadata: DeskResultMetadata | undefined): vscode.ChatFollowup[] {
  if (!metadata || metadata.error) {
    return [{ prompt: "pending tickets", label: "List pending tickets", command: "list" }];
  }
  const number = metadata.ticket;
  const next: vscode.ChatFollowup = {
    prompt: number === undefined ? "" : `after #${number}`,
    label: "Next ticket",
    command: "next",
  };
  const acts = metadata.acts ?? [];
  if (number !== undefined && acts.includes("answer")) {
    return [
      { prompt: `#${number}`, label: "Sign and post the editor's text", command: "answer" },
      ...(metadata.command === "draft" ? [] : [{ prompt: `#${number}`, label: "Draft an answer", command: "draft" }]),
      next,
    ];
  }
  if (number !== undefined && acts.includes("approve")) {
    return [
      { prompt: `#${number}`, label: "Approve", command: "approve" },
      { prompt: `#${number}`, label: "Reject with reason", command: "reject" },
      next,
    ];
  }
  return [next];
}

const HELP =
  "I answer ticketproxy tickets through the desk API:\n\n" +
  "- `/list`: pending tickets\n" +
  "- `/show 12`: one ticket, newest message first, its tools, template and review\n" +
  "- `/next`: the next pending ticket\n" +
  "- `/draft 12`: a draft from your chat model, opened in an editor for you to change\n" +
  "- `/answer 12`: sign the editor's text with your key and post it\n" +
  "- `/approve 12`, `/reject 12 <reason>`: judge an answer held for review\n";
