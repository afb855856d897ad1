// The ticketproxy desk: read tickets, answer through a form or free text, sign in the
// browser (desk-sign.js) and post through the desk API v1 (docs/desk-api.md) only.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  deskToken: null, ticket: null, signer: null, form: null,
  // Tickets this page posted to, with the state the events last gave them, so a posted
  // answer stays on the list until it is delivered.
  posted: new Map(),
};
const STATE_NAMES = {
  open: "awaiting answer", "needs-review": "needs review", answered: "answered",
  delivered: "delivered", expired: "expired",
};

// The versioned desk API (docs/desk-api.md): every read, and the post of a signed comment.
function deskHeaders() {
  return state.deskToken ? { Authorization: `Bearer ${state.deskToken}` } : {};
}

async function deskApi(path, options = {}) {
  const headers = { ...deskHeaders(), ...(options.headers || {}) };
  const response = await fetch(`/desk/api/v1/${path}`, { ...options, headers, cache: "no-store" });
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

function say(message, isError = false) {
  $("status").textContent = message;
  $("status").className = isError ? "error" : "";
}

function age(seconds) {
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  return `${Math.floor(seconds / 3600)}h`;
}

function showSigner() {
  $("key-info").textContent = state.signer
    ? `Signing as ${state.signer.login} (${state.signer.alg || "EdDSA"}, kid ${state.signer.kid.slice(0, 12)}…)`
    : "No key imported.";
}

// --- the list -------------------------------------------------------------------------

async function loadTickets() {
  // Pending first, then those that expired in the last hour (shown read-only), then the
  // ones this page answered, until they are delivered.
  const { tickets } = await deskApi("tickets");
  tickets.push(...(await deskApi("tickets?state=expired")).tickets);
  const listed = new Set(tickets.map((t) => t.number));
  for (const [number, entry] of state.posted) {
    if (!listed.has(number)) tickets.push(entry);
  }
  const list = $("tickets");
  list.replaceChildren();
  for (const ticket of tickets) {
    const item = element("li", null, `#${ticket.number}${ticket.step > 1 ? ` step ${ticket.step}` : ""} `);
    item.dataset.number = ticket.number;
    item.classList.toggle("open", Boolean(state.ticket && state.ticket.number === ticket.number));
    item.append(element("span", "title", ticket.title || ""));
    const info = STATE_NAMES[ticket.state] || ticket.state;
    item.append(element("span", "state", ticket.age === undefined ? ` ${info}` : ` ${info}, ${age(ticket.age)} old`));
    item.addEventListener("click", () => openTicket(ticket.number).catch((e) => say(e.message, true)));
    list.append(item);
  }
  // A live reload comes at any time: it must not wipe what the editor was just told (an
  // error above all), so the empty list is said only on an empty status line.
  if (!tickets.length && !$("status").textContent) say("No ticket is waiting.");
}

function moveInList(step) {
  const items = [...$("tickets").children];
  if (!items.length) return;
  const current = items.findIndex((item) => item.classList.contains("open"));
  const next = current < 0 ? 0 : Math.min(items.length - 1, Math.max(0, current + step));
  openTicket(Number(items[next].dataset.number)).catch((e) => say(e.message, true));
}

// --- one ticket -----------------------------------------------------------------------

function showMessages(ticket) {
  const newest = ticket.newest_message;
  $("newest").replaceChildren(newest ? messageElement(newest) : element("p", "state", "No message."));
  const earlier = ticket.conversation || [];
  $("earlier").hidden = !earlier.length;
  $("earlier-count").textContent = `${earlier.length} message${earlier.length === 1 ? "" : "s"}`;
  // Newest first here too: the one just before the question is the most useful.
  $("earlier-body").replaceChildren(...earlier.slice().reverse().map(messageElement));
  // The whole ticket as GitHub shows it, rendered and sanitised on the server.
  $("ticket-body").innerHTML = ticket.body_html;
  $("ticket-source").textContent = ticket.body;
}

function showReview(review) {
  $("review").hidden = !review;
  if (!review) return;
  $("cand-signer").textContent = review.signer;
  $("cand-text").textContent = review.text;
  $("cand-digest").textContent = review.answer_sha256;
  $("cand-approvals").textContent =
    `${review.approvals.length} of ${review.required_approvals} approval(s)` +
    (review.approvals.length ? `: ${review.approvals.join(", ")}` : "");
  $("cand-commands").replaceChildren(...review.commands.map((c) => element("li", null, c)));
  $("cand-findings").replaceChildren(...review.findings.map((finding) => {
    const row = element("tr");
    for (const cell of [finding.rule, finding.command, finding.argument || "", finding.detail]) {
      row.append(element("td", null, cell));
    }
    return row;
  }));
  $("cand-rules").hidden = !review.findings.length;
}

function showAnswering(ticket) {
  const acts = ticket.signing.acts;
  const answering = acts.includes("answer");
  const judging = acts.includes("approve");
  $("answering").hidden = !answering && !judging;
  $("sign-post").hidden = $("sign").hidden = !answering;
  $("approve").hidden = $("reject").hidden = !judging;
  $("answer-label").textContent = judging ? "Review note (optional)" : "Answer";
  state.form = answering
    ? buildToolForm($("tool-form"), ticket.tools || [], ticket.answer_template, syncForm)
    : null;
  $("tool-form").hidden = !state.form;
  $("form-mode-label").hidden = !state.form;
  $("form-mode").checked = Boolean(state.form);
  $("answer").value = judging ? "" : ticket.answer_template || "";
  syncForm();
}

async function openTicket(number, { quiet = false } = {}) {
  const ticket = await deskApi(`tickets/${number}`);
  // Read again live while the same things can be done on it: keep what the editor typed,
  // filled in or signed, rather than wiping it under their hands.
  const previous = state.ticket;
  const keepWork = quiet && previous && previous.number === number
    && previous.signing.acts.join() === ticket.signing.acts.join();
  state.ticket = ticket;
  for (const item of $("tickets").children) {
    item.classList.toggle("open", item.dataset.number === String(number));
  }
  $("ticket").hidden = false;
  $("ticket-link").textContent = ticket.reference;
  $("ticket-link").href = ticket.url || "#";
  $("ticket-title").textContent = ticket.title || "";
  showState(ticket.state);
  const when = [`${age(ticket.age)} old`];
  if (ticket.deadline) when.push(`deadline ${new Date(ticket.deadline).toLocaleTimeString()}`);
  if (ticket.step) when.push(`step ${ticket.step} of a run`);
  $("ticket-meta").textContent = when.join(" · ");
  showMessages(ticket);
  $("read-only").hidden = !ticket.read_only;
  const draft = ticket.draft;
  $("draft").hidden = !draft;
  $("draft-actions").hidden = !ticket.signing.acts.includes("answer");
  if (draft) {
    // A personal agent's draft names the editor whose agent drafted it (the desk API's
    // draft.agent); its model field then holds the route's name, not a model.
    $("draft-agent").hidden = !draft.agent;
    $("draft-agent").textContent = draft.agent ? `${draft.agent}'s agent` : "";
    $("draft-by-model").hidden = Boolean(draft.agent);
    $("draft-model").textContent = draft.model;
    $("draft-text").textContent = draft.text;
  }
  showReview(ticket.review);
  if (!keepWork) {
    showAnswering(ticket);
    $("signed").value = "";
    $("post").disabled = $("copy").disabled = true;
  }
  if (!quiet) say(`Opened ${ticket.reference}.`);
}

function showState(ticketState) {
  $("ticket-state").textContent = STATE_NAMES[ticketState] || ticketState;
  $("ticket-state").dataset.state = ticketState;
}

// --- answering ------------------------------------------------------------------------

// With the form on, the answer box shows exactly the text the form makes (and is read-only).
function syncForm() {
  const useForm = Boolean(state.form) && $("form-mode").checked;
  $("tool-form").disabled = !useForm;
  $("answer").readOnly = useForm;
  if (useForm) $("answer").value = state.form.answer().text;
}

function answerText() {
  if (state.form && $("form-mode").checked) {
    const { text, errors } = state.form.answer({ signing: true });
    if (errors.length) throw new Error(`fix the form first: ${errors.join("; ")}`);
    $("answer").value = text;
    return text;
  }
  const text = $("answer").value;
  if (!normaliseText(text)) throw new Error("write an answer first");
  return text;
}

async function sign(act, text) {
  if (!state.signer) throw new Error("import your private key file first");
  if (!state.ticket) throw new Error("open a ticket first");
  const { signing } = state.ticket;
  if (!signing.acts.includes(act)) throw new Error(`this ticket takes no ${act} now`);
  const judgedDigest = act === "answer" ? null : signing.answer_sha256;
  $("signed").value = await signComment(text, {
    ticket: signing.ticket, signer: state.signer, act, judgedDigest,
  });
  $("post").disabled = $("copy").disabled = false;
  say(`Signed (${act}) as ${state.signer.login} for ${signing.ticket}.`);
}

function githubToken() {
  const token = $("gh-token").value.trim();
  if (!token) throw new Error("enter your GitHub token to post");
  return token;
}

async function postComment() {
  const token = githubToken();
  sessionStorage.setItem("ticketproxy-gh-token", token);
  const ticket = state.ticket;
  // Through the desk API, which checks the signature is for this ticket and posts it as
  // this editor with their own token (a step of a run, owner/repo#12/3, goes on issue 12).
  const data = await deskApi(`tickets/${ticket.number}/comments`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-GitHub-Token": token },
    body: JSON.stringify({ body: $("signed").value }),
  });
  state.posted.set(ticket.number, { number: ticket.number, step: ticket.step, title: ticket.title, state: ticket.state });
  say(`Posted: ${data.comment.url}`);
  $("post").disabled = true;
}

// One click: sign and post (answer, approve or reject), once the key is imported.
async function signAndPost(act) {
  githubToken();
  await sign(act, act === "answer" ? answerText() : $("answer").value);
  await postComment();
}

// One click: sign the model's draft exactly as drafted, and post it as this editor's answer.
async function signDraft() {
  const draft = state.ticket && state.ticket.draft;
  if (!draft) throw new Error("this ticket has no draft");
  githubToken();
  if (await textDigest(draft.text) !== draft.sha256) {
    throw new Error("the draft does not match its sha256; edit it instead");
  }
  await sign("answer", draft.text);
  await postComment();
}

function editDraft() {
  const draft = state.ticket && state.ticket.draft;
  if (!draft) throw new Error("this ticket has no draft");
  $("form-mode").checked = false;
  syncForm();
  $("answer").value = draft.text;
  $("answer").focus();
  say("The draft is in the answer box: edit it, then sign it.");
  return Promise.resolve();
}

// --- live refresh and keys ------------------------------------------------------------

let reloadTimer = null;
function reloadSoon() {
  clearTimeout(reloadTimer);
  reloadTimer = setTimeout(() => loadTickets().catch((e) => say(e.message, true)), 100);
}

function onDeskEvent(name, data) {
  if (name === "resync") return reloadSoon();
  if (!name.startsWith("ticket.") || typeof data.number !== "number") return;
  if (state.posted.has(data.number)) state.posted.get(data.number).state = data.state;
  reloadSoon();
  const open = state.ticket;
  if (open && open.number === data.number && $("ticket-state").dataset.state !== data.state) {
    // What can be done on it changed (held, answered, delivered, expired, a next step):
    // read it again, leaving the status line to what the editor last did.
    openTicket(data.number, { quiet: true }).catch((e) => say(e.message, true));
  }
}

function onLive(connected) {
  $("live").textContent = connected ? "● live" : "○ reconnecting…";
  $("live").className = connected ? "live" : "live off";
  if (connected) reloadSoon();
}

function onKey(event) {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    if (state.ticket && state.ticket.signing.acts.includes("answer")) {
      signAndPost("answer").catch((e) => say(e.message, true));
    }
    return;
  }
  const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(event.target.tagName);
  // Escape leaves a field, so j and k move through the list again.
  if (typing && event.key === "Escape") event.target.blur();
  if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.key === "j") moveInList(1);
  else if (event.key === "k") moveInList(-1);
}

function on(id, handler) {
  $(id).addEventListener("click", () => handler().catch((e) => say(e.message, true)));
}

async function start() {
  const params = new URLSearchParams(location.search);
  // A ticket links here as /desk/?ticket=N: open that issue's waiting ticket at once.
  const linked = /^[1-9][0-9]{0,9}$/.test(params.get("ticket") || "") ? params.get("ticket") : null;
  // The desk token comes as /desk/#token=T: a fragment never reaches a server or its logs.
  // ?token=T (older links) still works, though the address was sent, and logged redacted.
  const fragment = new URLSearchParams(location.hash.slice(1));
  const given = fragment.get("token") || params.get("token");
  if (given) sessionStorage.setItem("ticketproxy-desk-token", given);
  if (fragment.has("token") || params.has("token")) {
    // Out of the address bar and history, so the token is not shared with a screenshot.
    const kept = linked ? `?ticket=${linked}` : "";
    history.replaceState(null, "", location.pathname + kept);
  }
  state.deskToken = sessionStorage.getItem("ticketproxy-desk-token");
  $("gh-token").value = sessionStorage.getItem("ticketproxy-gh-token") || "";
  state.signer = (await dbDo("readonly", (store) => store.get("signer"))) || null;
  showSigner();
  $("key-file").addEventListener("change", async (event) => {
    try {
      state.signer = await importKeyFile(event.target.files[0]);
      event.target.value = "";
      showSigner();
      say(`Key for ${state.signer.login} imported; it cannot be read back out.`);
    } catch (e) {
      say(`Cannot import the key: ${e.message}`, true);
    }
  });
  on("forget-key", async () => {
    await dbDo("readwrite", (store) => store.delete("signer"));
    state.signer = null;
    showSigner();
  });
  on("refresh", loadTickets);
  on("sign", async () => sign("answer", answerText()));
  on("sign-post", () => signAndPost("answer"));
  on("approve", () => signAndPost("approve"));
  on("reject", () => signAndPost("reject"));
  on("post", postComment);
  on("sign-draft", signDraft);
  on("edit-draft", editDraft);
  on("copy", async () => {
    await navigator.clipboard.writeText($("signed").value);
    say("Signed comment copied.");
  });
  $("form-mode").addEventListener("change", syncForm);
  document.addEventListener("keydown", onKey);
  await loadTickets();
  if (linked) await openTicket(Number(linked));
  followEvents(deskHeaders(), onDeskEvent, onLive);
}

if (typeof document !== "undefined") {
  document.addEventListener("DOMContentLoaded", () => start().catch((e) => say(e.message, true)));
}
