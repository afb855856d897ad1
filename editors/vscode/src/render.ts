// Pure: the chat's markdown for the desk API's answers. Agent text is untrusted, so it is shown
// in fences (no links, images or HTML of its own), never as markdown.
import type { Message, TicketDetail, TicketEntry } from "./desk";

/** Return `text` in a fence no line of it can close. */
export function fenced(text: string, language = "text"): string {
  const runs = text.match(/`{3,}/g) ?? [];
  const longest = runs.reduce((most, run) => Math.max(most, run.length), 2);
  const fence = "`".repeat(longest + 1);
  return `${fence}${language}\n${text}\n${fence}\n`;
}

/** Return `text` with markdown's special characters escaped, for titles and logins. */
export function plain(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>~]/g, (c) => "\\" + c);
}

export function age(seconds: number): string {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

export function entryLine(entry: TicketEntry): string {
  const review = entry.needs_review ? " · **needs review**" : "";
  const step = entry.step !== null && entry.step > 1 ? ` · step ${entry.step}` : "";
  return `- **#${entry.number}** ${plain(entry.title)} · ${entry.state}${review}${step} · ${age(entry.age)} old`;
}

export function listMarkdown(entries: TicketEntry[]): string {
  if (entries.length === 0) {
    return "No pending tickets.\n";
  }
  return `${entries.length} pending ticket(s):\n\n${entries.map(entryLine).join("\n")}\n`;
}

function messageMarkdown(message: Message): string {
  const who = message.name ? `${message.role} (${plain(message.name)})` : message.role;
  let out = `**${who}**\n\n`;
  if (message.content) {
    out += fenced(message.content);
  }
  for (const call of message.tool_calls) {
    out += `tool call \`${plain(call.name)}\`:\n\n` + fenced(call.arguments, "json");
  }
  if (message.tool_call_id) {
    out += `(result of tool call ${plain(message.tool_call_id)})\n`;
  }
  return out;
}

/** The ticket as the chat shows it: newest message first, then tools, template, review. */
export function ticketMarkdown(ticket: TicketDetail): string {
  const parts: string[] = [];
  parts.push(
    `## #${ticket.number} ${plain(ticket.title)}\n\n` +
      `${ticket.reference} · ${ticket.state} · ${age(ticket.age)} old` +
      (ticket.deadline ? ` · answer before ${ticket.deadline}` : "") +
      "\n",
  );
  parts.push("### Newest message\n\n" + (ticket.newest_message ? messageMarkdown(ticket.newest_message) : "(none)\n"));
  if (ticket.tools.length > 0) {
    const tools = ticket.tools
      .map((tool) => `- \`${plain(tool.name)}\`: ${plain(tool.description ?? "")}\n\n` + fenced(JSON.stringify(tool.parameters, null, 2), "json"))
      .join("\n");
    parts.push(`### Tools (${ticket.tools.length})\n\n${tools}`);
  }
  parts.push("### Answer template\n\n" + fenced(ticket.answer_template, "markdown"));
  if (ticket.draft) {
    parts.push("### Draft\n\n" + fenced(ticket.draft.text, "markdown"));
  }
  if (ticket.review) {
    parts.push(reviewMarkdown(ticket));
  }
  if (ticket.conversation.length > 0) {
    const earlier = [...ticket.conversation].reverse().map(messageMarkdown).join("\n");
    parts.push(`### Earlier conversation (${ticket.conversation.length}, newest first)\n\n${earlier}`);
  }
  return parts.join("\n");
}

export function reviewMarkdown(ticket: TicketDetail): string {
  const review = ticket.review;
  if (!review) return "";
  const findings = review.findings
    .map((f) => `- rule **${plain(f.rule)}**: \`${plain(f.command)}\`${f.argument ? ` (${plain(f.argument)})` : ""}: ${plain(f.detail)}`)
    .join("\n");
  const commands = review.commands.map((c) => fenced(c, "sh")).join("");
  return (
    `### Held for review\n\nAnswer by ${plain(review.signer)} (sha256 \`${review.answer_sha256}\`), ` +
    `${review.approvals.length} of ${review.required_approvals} approval(s):\n\n` +
    fenced(review.text, "markdown") +
    (commands ? `\nCommands:\n\n${commands}` : "") +
    (findings ? `\nRules that matched:\n\n${findings}\n` : "")
  );
}

/** The prompt asking a model for a draft answer: the ticket's parts, as data. */
export function draftPrompt(ticket: TicketDetail): string {
  const conversation = [...ticket.conversation, ...(ticket.newest_message ? [ticket.newest_message] : [])];
  return (
    "You draft an answer that a person will read, edit and sign before an AI agent receives it. " +
    "The agent's request follows as JSON. Answer the newest message. Reply with the answer only, " +
    "following the answer template: to call one of the tools, keep a fenced tool_call block with " +
    "the tool's name and JSON arguments; otherwise write plain text.\n\n" +
    JSON.stringify(
      { conversation, tools: ticket.tools, answer_template: ticket.answer_template },
      null,
      2,
    )
  );
}
