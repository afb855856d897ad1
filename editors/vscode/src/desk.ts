// A client of the desk API v1 (docs/desk-api.md): the only server interface the extension uses.

export interface TicketEntry {
  number: number;
  reference: string;
  title: string;
  url: string;
  state: string;
  needs_review: boolean;
  age: number;
  created_at: string;
  deadline: string | null;
  run: string | null;
  step: number | null;
}

export interface ToolCall {
  id?: string;
  name: string;
  arguments: string;
}

export interface Message {
  role: string;
  name: string | null;
  content: string | null;
  tool_calls: ToolCall[];
  tool_call_id: string | null;
}

export interface Tool {
  name: string;
  description: string | null;
  parameters: unknown;
}

export interface Finding {
  rule: string;
  command: string;
  argument: string | null;
  detail: string;
}

export interface Review {
  answer_sha256: string;
  text: string;
  signer: string;
  comment_url: string;
  required_approvals: number;
  approvals: unknown[];
  commands: string[];
  findings: Finding[];
}

export interface Signing {
  ticket: string;
  acts: string[];
  answer_sha256: string | null;
}

export interface TicketDetail extends TicketEntry {
  newest_message: Message | null;
  conversation: Message[];
  tools: Tool[];
  answer_template: string;
  draft: { text: string; model: string | null; sha256: string } | null;
  review: Review | null;
  signing: Signing;
  read_only: boolean;
}

export interface DeskConfig {
  repo: string;
  github_api_url: string;
}

export interface PostedComment {
  comment: { id: number; url: string; author: string };
  ticket: string;
  act: string;
  signer: string;
  sha256: string;
}

/** A failure the chat shows as it is: `message` says what happened and what to do. */
export class DeskError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    readonly code: string | null,
  ) {
    super(message);
    this.name = "DeskError";
  }
}

const API_PATH = "/desk/api/v1";

/** Return the API's base address from the configured desk URL (`http://host:port`, or its `/desk/`). */
export function apiBase(deskUrl: string): string {
  const trimmed = deskUrl.trim().replace(/\/+$/, "");
  const root = trimmed.replace(/\/desk(\/api(\/v1)?)?$/, "");
  return root + API_PATH;
}

export class DeskClient {
  private readonly base: string;

  constructor(
    deskUrl: string,
    private readonly deskToken: string | undefined,
    private readonly timeoutMs = 15000,
  ) {
    this.base = apiBase(deskUrl);
  }

  config(): Promise<DeskConfig> {
    return this.call<DeskConfig>("GET", "/config");
  }

  async tickets(filters: Record<string, string> = {}): Promise<TicketEntry[]> {
    const query = new URLSearchParams(filters).toString();
    const body = await this.call<{ tickets: TicketEntry[] }>(
      "GET",
      "/tickets" + (query ? "?" + query : ""),
    );
    return body.tickets;
  }

  ticket(number: number): Promise<TicketDetail> {
    return this.call<TicketDetail>("GET", `/tickets/${number}`);
  }

  /** Post a comment signed here, as the editor, with their own GitHub token. */
  postComment(number: number, body: string, githubToken: string): Promise<PostedComment> {
    return this.call<PostedComment>("POST", `/tickets/${number}/comments`, {
      body: JSON.stringify({ body }),
      headers: { "Content-Type": "application/json", "X-GitHub-Token": githubToken },
    });
  }

  private async call<T>(
    method: string,
    path: string,
    extra: { body?: string; headers?: Record<string, string> } = {},
  ): Promise<T> {
    const url = this.base + path;
    const headers: Record<string, string> = { Accept: "application/json", ...extra.headers };
    if (this.deskToken) {
      headers["Authorization"] = `Bearer ${this.deskToken}`;
    }
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers,
        body: extra.body,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new DeskError(unreachable(this.base, error), null, "desk_unreachable");
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new DeskError(
        `the desk at ${this.base} answered ${response.status} with something that is not ` +
          "JSON: is ticketproxy.deskUrl the address of `ticketproxy serve`?",
        response.status,
        "not_json",
      );
    }
    if (!response.ok) {
      throw refusal(response.status, parsed);
    }
    return parsed as T;
  }
}

function unreachable(base: string, error: unknown): string {
  const cause = (error as { cause?: { code?: string } }).cause;
  const why = cause?.code ?? (error instanceof Error ? error.message : String(error));
  return (
    `cannot reach the desk at ${base} (${why}): is \`ticketproxy serve\` running there, ` +
    "and is the setting ticketproxy.deskUrl right?"
  );
}

function refusal(status: number, body: unknown): DeskError {
  const fields = (body ?? {}) as { error?: string; code?: string; reason?: string };
  const code = fields.code ?? null;
  const said = fields.error ?? `HTTP ${status}`;
  if (code === "desk_access_refused") {
    return new DeskError(
      `the desk refused its token (${said}). Set the right one with the command ` +
        "“ticketproxy: Set desk token”.",
      status,
      code,
    );
  }
  if (code === "github_token_refused" || code === "github_token_missing") {
    return new DeskError(
      `GitHub refused your token (${said}). Set it with “ticketproxy: Set GitHub token”.`,
      status,
      code,
    );
  }
  const reason = fields.reason ? ` (${fields.reason})` : "";
  return new DeskError(`the desk answered ${status}: ${said}${reason}`, status, code);
}
