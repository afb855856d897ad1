// Signing through `ticketproxy sign`: the private key stays in its file, read by the CLI only;
// the extension hands it the exact text and gets back the signed comment.
import { execFile } from "node:child_process";

export type Act = "answer" | "approve" | "reject";

export interface SignRequest {
  text: string;
  ticket: string;
  act: Act;
  judgedSha256?: string;
}

/** A signing failure, told as the CLI told it. */
export class SignError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SignError";
  }
}

export function signArguments(request: SignRequest, keyPath: string): string[] {
  const args = ["sign", "--ticket", request.ticket, "--key", keyPath, "--act", request.act];
  if (request.judgedSha256 !== undefined) {
    args.push("--judged-sha256", request.judgedSha256);
  }
  args.push("-");
  return args;
}

/** Return `request.text` signed with the key at `keyPath`, by `cli sign` (text on stdin). */
export function signWithCli(cli: string, keyPath: string, request: SignRequest): Promise<string> {
  if (!keyPath) {
    return Promise.reject(
      new SignError("no signing key: set ticketproxy.keyPath to your key file (`ticketproxy keygen`)"),
    );
  }
  return new Promise((resolve, reject) => {
    const child = execFile(
      cli,
      signArguments(request, keyPath),
      { timeout: 30000, maxBuffer: 4 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) {
          const missing = (error as NodeJS.ErrnoException).code === "ENOENT";
          reject(
            new SignError(
              missing
                ? `cannot run \`${cli}\`: install ticketproxy or set ticketproxy.cliPath`
                : `\`${cli} sign\` failed: ${stderr.trim() || error.message}`,
            ),
          );
          return;
        }
        resolve(stdout.replace(/\n$/, ""));
      },
    );
    child.stdin?.end(request.text);
  });
}

/** Return the `sub` (the signer's login) of the signature a signed comment carries, if any. */
export function signerOf(signedComment: string): string | undefined {
  const jws = /<!-- ticketproxy-signature: ([\w-]+\.([\w-]+)\.[\w-]+) -->\s*$/.exec(signedComment);
  if (!jws) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(jws[2]!, "base64url").toString("utf-8")) as { sub?: unknown };
    return typeof claims.sub === "string" ? claims.sub : undefined;
  } catch {
    return undefined;
  }
}
