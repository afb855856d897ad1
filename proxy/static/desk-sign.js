// Signing in the browser with a non-extractable key: Ed25519 (EdDSA) or P-256 (ES256).
// The signed comment is exactly what auth/sign.py makes (see auth/comment.py for the format).
"use strict";

const TRAILER_PREFIX = "<!-- ticketproxy-signature: ";
const TRAILER_SUFFIX = " -->";
const TTL_SECONDS = 3600;
// Python's str.strip() whitespace, so the browser signs the same text the server hashes.
const PY_SPACE = "\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const STRIP_RE = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, "g");
// The two algorithms a `ticketproxy keygen` key file may hold (auth/jwk.py), and how
// WebCrypto imports and signs with each; a JWS ES256 signature is WebCrypto's raw r||s.
const KEY_KINDS = {
  EdDSA: { kty: "OKP", crv: "Ed25519", members: ["x"], import: { name: "Ed25519" },
           sign: { name: "Ed25519" } },
  ES256: { kty: "EC", crv: "P-256", members: ["x", "y"],
           import: { name: "ECDSA", namedCurve: "P-256" },
           sign: { name: "ECDSA", hash: "SHA-256" } },
};

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
  const alg = signer.alg || "EdDSA";
  const iat = Math.floor(Date.now() / 1000);
  const header = { alg, kid: signer.kid, typ: "JWT" };
  const claims = {
    sub: signer.login, aud: ticket, act, sha256: digest,
    iat, exp: iat + TTL_SECONDS, jti: randomJti(),
  };
  const signingInput = `${base64urlJson(header)}.${base64urlJson(claims)}`;
  const signature = await crypto.subtle.sign(
    KEY_KINDS[alg].sign, signer.key, new TextEncoder().encode(signingInput));
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

// Read the key file `ticketproxy keygen` writes (NAME.key: one private JWK plus `login`).
function keyKindOf(jwk) {
  const alg = Object.keys(KEY_KINDS).find(
    (name) => KEY_KINDS[name].kty === jwk.kty && KEY_KINDS[name].crv === jwk.crv);
  if (!alg || (jwk.alg && jwk.alg !== alg)) {
    throw new Error("the desk signs with the Ed25519 or P-256 key files `ticketproxy keygen` writes");
  }
  return alg;
}

async function importKeyFile(file) {
  let jwk;
  try {
    jwk = JSON.parse(await file.text());
  } catch (e) {
    throw new Error(`${file.name} is not a key file from \`ticketproxy keygen\` (not JSON)`);
  }
  if (!jwk || typeof jwk !== "object") throw new Error(`${file.name} holds no private key`);
  const alg = keyKindOf(jwk);
  const kind = KEY_KINDS[alg];
  if (!jwk.d) throw new Error("the file holds a public key: import your private key file");
  if (!jwk.login || !jwk.kid) throw new Error("the key file has no login or kid");
  // Only the key members: the rest (login, kid, alg, use) are ours, not WebCrypto's.
  const members = { kty: kind.kty, crv: kind.crv, d: jwk.d };
  for (const name of kind.members) members[name] = jwk[name];
  const key = await crypto.subtle.importKey(
    "jwk", members, kind.import, false /* non-extractable */, ["sign"]);
  const signer = { key, login: jwk.login, kid: jwk.kid, alg };
  await dbDo("readwrite", (store) => store.put(signer, "signer"));
  return signer;
}
