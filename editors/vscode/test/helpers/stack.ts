// A real `ticketproxy serve` on the embedded GitHub (the `ticketproxy` found on PATH), on free
// ports, with its own data directory, as the README's quick start runs it.
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";

export const DESK_TOKEN = "desk-token-for-the-extension-tests";

export interface Person {
  login: string;
  token: string;
  key: string;
}

export interface Stack {
  /** `http://127.0.0.1:PORT`: the desk URL the extension is configured with. */
  url: string;
  dataDir: string;
  alice: Person;
  /** What the server logged so far. */
  log(): string;
  stop(): Promise<void>;
}

/** Environment for ticketproxy: the test's data directory and no GitHub token (embedded). */
function serverEnv(dataDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith("TICKETPROXY_") && name !== "GITHUB_TOKEN") env[name] = value;
  }
  return {
    ...env,
    TICKETPROXY_DATA_DIR: dataDir,
    TICKETPROXY_SANDBOX_PORT: "0",
    TICKETPROXY_DESK_TOKEN: DESK_TOKEN,
    TICKETPROXY_POLL_INTERVAL: "0.2",
  };
}

export async function startStack(): Promise<Stack> {
  const dataDir = mkdtempSync(join(tmpdir(), "ticketproxy-vscode-"));
  const child = spawn("ticketproxy", ["serve", "--port", "0"], {
    env: serverEnv(dataDir),
    cwd: dataDir,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`ticketproxy serve did not start:\n${stderr}`)), 30000);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ticketproxy (is it on PATH?): ${error.message}`));
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`ticketproxy serve exited (${code}):\n${stderr}`));
    });
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const found = /OpenAI base URL (http:\/\/\S+)\/v1/.exec(out);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]!);
      }
    });
  });
  const users = JSON.parse(readFileSync(join(dataDir, "sandbox-users.json"), "utf-8")) as {
    users: { login: string; token: string }[];
  };
  const alice = users.users.find((u) => u.login === "alice")!;
  return {
    url,
    dataDir,
    alice: { login: "alice", token: alice.token, key: join(dataDir, "alice.key") },
    log: () => stderr,
    stop: () => stop(child, dataDir),
  };
}

function stop(child: ChildProcess, dataDir: string): Promise<void> {
  return new Promise((resolve) => {
    child.removeAllListeners("exit");
    child.on("exit", () => {
      rmSync(dataDir, { recursive: true, force: true });
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/** `ticketproxy sandbox add-user`: a person joins the running sandbox and the keyring. */
export function addUser(stack: Stack, login: string, roles: string): Promise<Person> {
  return new Promise((resolve, reject) => {
    execFile(
      "ticketproxy",
      ["sandbox", "add-user", login, "--roles", roles],
      { env: serverEnv(stack.dataDir), cwd: stack.dataDir },
      (error, stdout, stderr) => {
        if (error) {
          reject(new Error(`add-user failed: ${stderr}`));
          return;
        }
        const token = /GitHub token: (\S+)/.exec(stdout)?.[1];
        const key = /private key: (\S+)/.exec(stdout)?.[1];
        if (!token || !key) {
          reject(new Error(`add-user printed no token or key: ${stdout}`));
          return;
        }
        // The running server re-reads its users file and keyring within a second.
        setTimeout(() => resolve({ login, token, key }), 1500);
      },
    );
  });
}

/** A port nothing listens on (bound, then closed). */
export function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface AgentRequest {
  completion: Promise<OpenAI.Chat.Completions.ChatCompletion>;
  abort(): void;
}

/** An agent (the openai client) asking the stack; it waits until a person answers. */
export function askAsAgent(stack: Stack, question: string, tools: OpenAI.Chat.Completions.ChatCompletionTool[] = []): AgentRequest {
  const client = new OpenAI({ baseURL: `${stack.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 120000 });
  const controller = new AbortController();
  const completion = client.chat.completions.create(
    {
      model: "gpt-4o",
      messages: [{ role: "user", content: question }],
      ...(tools.length ? { tools } : {}),
    },
    { signal: controller.signal },
  );
  completion.catch(() => undefined);
  return { completion, abort: () => controller.abort() };
}
