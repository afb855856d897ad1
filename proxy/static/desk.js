// The ticketproxy desk: sign answers in the browser with a non-extractable Ed25519 key.
// The signed comment is exactly what auth/sign.py makes (see auth/comment.py for the format).
"use strict";

const TRAILER_PREFIX = "<!-- ticketproxy-signature: ";
const TRAILER_SUFFIX = " -->";
const TTL_SECONDS = 3600;
// Python's str.strip() whitespace, so the browser signs the same text the server hashes.
const PY_SPACE = "\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const STRIP_RE = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, "g");

const $ = (id) => document.getElementById(id);
const state = { deskToken: null, config: null, ticket: null, signer: null };

function normaliseText(text) {
  return text.replace(/\r\n/g, "\n").replace(/\r/g, "\n").replace(STRIP_RE, "");
}

function base64url(bytes) {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function base64urlJson(value) {
  return base64url(new TextEncoder().encode(JSON.stringify(value)));
}

async function textDigest(text) {
  const data = new TextEncoder().encode(normaliseText(text));
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", data));
  return Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("");
}

function randomJti() {
  return base64url(crypto.getRandomValues(new Uint8Array(16)));
}

// Return the comment body carrying `text` signed for `ticket` (owner/repo#N).
async function signComment(text, { ticket, signer, act = "answer", judgedDigest = null }) {
  const digest = act === "answer" ? await textDigest(text) : judgedDigest;
  if (!/^[0-9a-f]{64}$/.test(digest || "")) throw new Error("no digest to sign");
  const iat = Math.floor(Date.now() / 1000);
  const header = { alg: "EdDSA", kid: signer.kid, typ: "JWT" };
  const claims = {
    sub: signer.login, aud: ticket, act, sha256: digest,
    iat, exp: iat + TTL_SECONDS, jti: randomJti(),
  };
  const signingInput = `${base64urlJson(header)}.${base64urlJson(claims)}`;
  const signature = await crypto.subtle.sign(
    { name: "Ed25519" }, signer.key, new TextEncoder().encode(signingInput));
  const token = `${signingInput}.${base64url(new Uint8Array(signature))}`;
  const trailer = `${TRAILER_PREFIX}${token}${TRAILER_SUFFIX}`;
  const normalised = normaliseText(text);
  return normalised ? `${normalised}\n\n${trailer}` : trailer;
}

// --- the key, kept in IndexedDB as a non-extractable CryptoKey ---------------------------

function openDb() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open("ticketproxy-desk", 1);
    request.onupgradeneeded = () => request.result.createObjectStore("keys");
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

async function dbDo(mode, action) {
  const db = await openDb();
  return new Promise((resolve, reject) => {
    const tx = db.transaction("keys", mode);
    const request = action(tx.objectStore("keys"));
    tx.oncomplete = () => { db.close(); resolve(request.result); };
    tx.onerror = () => { db.close(); reject(tx.error); };
  });
}

async function importKeyFile(file) {
  const jwk = JSON.parse(await file.text());
  if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || !jwk.d || !jwk.x) {
    throw new Error("the desk signs with Ed25519 key files (kty OKP, crv Ed25519) only");
  }
  if (!jwk.login || !jwk.kid) throw new Error("the key file has no login or kid");
  // Only the key members: the rest (login, kid, alg) are ours, not WebCrypto's.
  const key = await crypto.subtle.importKey(
    "jwk", { kty: "OKP", crv: "Ed25519", x: jwk.x, d: jwk.d }, { name: "Ed25519" },
    false /* non-extractable */, ["sign"]);
  const signer = { key, login: jwk.login, kid: jwk.kid };
  await dbDo("readwrite", (store) => store.put(signer, "signer"));
  return signer;
}

function showSigner() {
  $("key-info").textContent = state.signer
    ? `Signing as ${state.signer.login} (kid ${state.signer.kid.slice(0, 12)}…)`
    : "No key imported.";
}

// --- the proxy's desk API --------------------------------------------------------------

// The versioned desk API (docs/desk-api.md): every read, and the post of a signed comment.
async function deskApi(path, options = {}) {
  const headers = { ...(options.headers || {}) };
  if (state.deskToken) headers.Authorization = `Bearer ${state.deskToken}`;
  const response = await fetch(`/desk/api/v1/${path}`, { ...options, headers, cache: "no-store" });
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

const STATE_NAMES = { open: "awaiting answer", "needs-review": "needs review" };

function say(message, isError = false) {
  $("status").textContent = message;
  $("status").className = isError ? "error" : "";
}

function age(seconds) {
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  return `${Math.floor(seconds / 3600)}h`;
}

async function loadTickets() {
  // Pending first, then those that expired in the last hour (shown read-only).
  const { tickets } = await deskApi("tickets");
  tickets.push(...(await deskApi("tickets?state=expired")).tickets);
  const list = $("tickets");
  list.replaceChildren();
  for (const ticket of tickets) {
    const item = document.createElement("li");
    item.dataset.number = ticket.number;
    // A later step of an agent run is answered on its run's issue: say which step.
    item.textContent = ticket.step > 1 ? `#${ticket.number} step ${ticket.step} ` : `#${ticket.number} `;
    const info = document.createElement("span");
    info.className = "state";
    info.textContent = `${STATE_NAMES[ticket.state] || ticket.state}, ${age(ticket.age)} old`;
    item.append(info);
    item.addEventListener("click", () => openTicket(ticket.number).catch((e) => say(e.message, true)));
    list.append(item);
  }
  if (!tickets.length) say("No ticket is waiting.");
}

async function openTicket(number) {
  const ticket = await deskApi(`tickets/${number}`);
  state.ticket = ticket;
  for (const item of $("tickets").children) {
    item.classList.toggle("open", item.dataset.number === String(number));
  }
  $("ticket").hidden = false;
  $("ticket-link").textContent = ticket.reference;
  $("ticket-link").href = ticket.url || "#";
  $("ticket-state").textContent = STATE_NAMES[ticket.state] || ticket.state;
  // body_html is rendered and sanitised on the server (embedded_github.markdown_html: no raw
  // HTML, safe links only), the same renderer as the embedded GitHub's issue page.
  $("ticket-body").innerHTML = ticket.body_html;
  $("ticket-source").textContent = ticket.body;
  // An expired ticket is shown read-only: nothing on it can be signed any more.
  $("read-only").hidden = !ticket.read_only;
  $("answering").hidden = ticket.read_only;
  const draft = ticket.draft;
  $("draft").hidden = !draft;
  $("draft-actions").hidden = Boolean(ticket.read_only || ticket.review);
  if (draft) {
    $("draft-model").textContent = draft.model;
    $("draft-text").textContent = draft.text;
  }
  const review = ticket.review;
  $("review").hidden = !review;
  $("approve").hidden = $("reject").hidden = !review;
  $("sign").hidden = Boolean(review);
  $("answer-label").textContent = review ? "Review note" : "Answer";
  $("answer").value = review ? "" : ticket.answer_template;
  if (review) {
    $("cand-signer").textContent = review.signer;
    $("cand-text").textContent = review.text;
    $("cand-digest").textContent = review.answer_sha256;
    $("cand-commands").replaceChildren(...review.commands.map((c) => {
      const li = document.createElement("li");
      li.textContent = c;
      return li;
    }));
  }
  $("signed").value = "";
  $("post").disabled = $("copy").disabled = true;
  say(`Opened ${ticket.reference}.`);
}

async function sign(act, text = $("answer").value) {
  if (!state.signer) throw new Error("import your private key file first");
  if (!state.ticket) throw new Error("open a ticket first");
  if (state.ticket.read_only) throw new Error("this ticket expired; it takes no answer");
  const { signing } = state.ticket;
  const judgedDigest = act === "answer" ? null : signing.answer_sha256;
  $("signed").value = await signComment(text, {
    ticket: signing.ticket, signer: state.signer, act, judgedDigest,
  });
  $("post").disabled = $("copy").disabled = false;
  say(`Signed (${act}) as ${state.signer.login} for ${signing.ticket}.`);
}

// One click: sign the model's draft exactly as drafted, and post it as this editor's answer.
async function signDraft() {
  const draft = state.ticket && state.ticket.draft;
  if (!draft) throw new Error("this ticket has no draft");
  if (!$("gh-token").value.trim()) throw new Error("enter your GitHub token to post");
  if (await textDigest(draft.text) !== draft.sha256) {
    throw new Error("the draft does not match its sha256; edit it instead");
  }
  await sign("answer", draft.text);
  await postComment();
}

function editDraft() {
  const draft = state.ticket && state.ticket.draft;
  if (!draft) throw new Error("this ticket has no draft");
  $("answer").value = draft.text;
  $("answer").focus();
  say("The draft is in the answer box: edit it, then sign it.");
  return Promise.resolve();
}

async function postComment() {
  const token = $("gh-token").value.trim();
  if (!token) throw new Error("enter your GitHub token to post");
  sessionStorage.setItem("ticketproxy-gh-token", token);
  // Through the desk API, which checks the signature is for this ticket and posts it as
  // this editor with their own token (a step of a run, owner/repo#12/3, goes on issue 12).
  const data = await deskApi(`tickets/${state.ticket.number}/comments`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-GitHub-Token": token },
    body: JSON.stringify({ body: $("signed").value }),
  });
  say(`Posted: ${data.comment.url}`);
  $("post").disabled = true;
}

function on(id, handler) {
  $(id).addEventListener("click", () => handler().catch((e) => say(e.message, true)));
}

async function start() {
  const params = new URLSearchParams(location.search);
  // A ticket links here as /desk/?ticket=N: open that waiting ticket at once.
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
  on("sign", () => sign("answer"));
  on("approve", () => sign("approve"));
  on("reject", () => sign("reject"));
  on("post", postComment);
  on("sign-draft", signDraft);
  on("edit-draft", editDraft);
  on("copy", async () => {
    await navigator.clipboard.writeText($("signed").value);
    say("Signed comment copied.");
  });
  state.config = await deskApi("config");
  await loadTickets();
  if (linked) await openTicket(Number(linked));
}

if (typeof document !== "undefined") {
  document.addEventListener("DOMContentLoaded", () => start().catch((e) => say(e.message, true)));
}
