// The desk's event stream (GET /desk/api/v1/events, server-sent events, docs/desk-api.md) and
// the pending count it keeps fresh: the status bar refreshes itself, nobody has to ask /list.
import { apiBase, DeskClient } from "./desk";
import type { DeskSettings } from "./handler";

export interface DeskEvent {
  event: string;
  data: unknown;
}

/** Pure: split stream text into its complete events (heartbeats left out) and the rest. */
export function parseEvents(buffer: string): { events: DeskEvent[]; rest: string } {
  const blocks = buffer.replace(/\r\n?/g, "\n").split("\n\n");
  const rest = blocks.pop() ?? "";
  const events: DeskEvent[] = [];
  for (const block of blocks) {
    let event = "message";
    const data: string[] = [];
    for (const line of block.split("\n")) {
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    if (data.length === 0) continue; // `: heartbeat`
    const text = data.join("\n");
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // kept as text
    }
    events.push({ event, data: parsed });
  }
  return { events, rest };
}

/** Read the desk's events until the stream ends or `signal` aborts; throws when it cannot open. */
export async function readEvents(
  deskUrl: string,
  deskToken: string | undefined,
  onEvent: (event: DeskEvent) => void,
  signal: AbortSignal,
): Promise<void> {
  const headers: Record<string, string> = { Accept: "text/event-stream" };
  if (deskToken) headers["Authorization"] = `Bearer ${deskToken}`;
  const url = apiBase(deskUrl) + "/events";
  const response = await fetch(url, { headers, signal });
  if (!response.ok || !response.body) {
    throw new Error(`the desk's event stream ${url} answered ${response.status}`);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    const { events, rest } = parseEvents(buffer + decoder.decode(value, { stream: true }));
    buffer = rest;
    events.forEach(onEvent);
  }
}

/** What the status bar shows: the pending count, or null and why when the desk is out of reach. */
export type ShowCount = (count: number | null, tooltip: string) => void;

/**
 * The pending tickets' count, re-read from `GET /tickets` on the stream's `ready`, on every
 * ticket event and on `resync`; the stream is reopened after `retryMs` when it fails or ends.
 */
export class PendingCount {
  private refreshing: Promise<void> = Promise.resolve();

  constructor(
    private readonly settings: () => DeskSettings,
    private readonly deskToken: () => Promise<string | undefined>,
    private readonly show: ShowCount,
    private readonly retryMs = 5000,
  ) {}

  /** Start watching; return the function that stops it. */
  start(): () => void {
    const stopped = new AbortController();
    void this.watch(stopped.signal);
    return () => stopped.abort();
  }

  private async watch(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const { deskUrl } = this.settings();
      try {
        const token = await this.deskToken();
        await readEvents(deskUrl, token, () => this.refresh(deskUrl, token), signal);
      } catch (error) {
        if (signal.aborted) return;
        this.show(null, `ticketproxy desk: no events from ${deskUrl} (${describe(error)}); retrying`);
      }
      await pause(this.retryMs, signal);
    }
  }

  /** Re-read the list, one read at a time, so counts are shown in the order events came. */
  private refresh(deskUrl: string, token: string | undefined): void {
    this.refreshing = this.refreshing.then(async () => {
      try {
        const tickets = await new DeskClient(deskUrl, token).tickets();
        const held = tickets.filter((t) => t.needs_review).length;
        this.show(tickets.length, `ticketproxy desk: ${tickets.length} pending, ${held} held for review`);
      } catch (error) {
        this.show(null, `ticketproxy desk: ${describe(error)}`);
      }
    });
  }
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string } }).cause;
  return cause?.code ?? (error instanceof Error ? error.message : String(error));
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });
}
