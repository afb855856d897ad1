// VS Code's side of @desk: settings, secrets, editors and commands around DeskParticipant.
import * as vscode from "vscode";
import { DeskParticipant, PARTICIPANT_ID, SHOW_COMMAND, type DeskSettings, type Host } from "./handler";
import { PendingCount } from "./watch";

const DESK_TOKEN = "ticketproxy.deskToken";
const GITHUB_TOKEN = "ticketproxy.githubToken";

export function activate(context: vscode.ExtensionContext): void {
  const drafts = new Map<number, vscode.TextDocument>();
  const host: Host = {
    settings: readSettings,
    deskToken: () => Promise.resolve(context.secrets.get(DESK_TOKEN)),
    githubToken: () => Promise.resolve(context.secrets.get(GITHUB_TOKEN)),
    async openDraft(ticket, text) {
      const document = await vscode.workspace.openTextDocument({ language: "markdown", content: text });
      drafts.set(ticket, document);
      await vscode.window.showTextDocument(document, { preview: false });
    },
    editorText(ticket) {
      const draft = drafts.get(ticket);
      if (draft && !draft.isClosed) {
        return draft.getText();
      }
      return vscode.window.activeTextEditor?.document.getText();
    },
    askReason: (ticket) =>
      Promise.resolve(
        vscode.window.showInputBox({
          title: `Reject the answer held on #${ticket}`,
          prompt: "Why must it not be released? (posted on the issue, signed)",
          ignoreFocusOut: true,
        }),
      ),
    userMessage: (text) => vscode.LanguageModelChatMessage.User(text),
  };
  const desk = new DeskParticipant(host);
  const participant = vscode.chat.createChatParticipant(PARTICIPANT_ID, desk.handle);
  participant.followupProvider = desk.followupProvider;
  context.subscriptions.push(
    participant,
    vscode.commands.registerCommand("ticketproxy.setDeskToken", () =>
      storeSecret(context, DESK_TOKEN, "The desk token (TICKETPROXY_DESK_TOKEN of the server)"),
    ),
    vscode.commands.registerCommand("ticketproxy.setGitHubToken", () =>
      storeSecret(context, GITHUB_TOKEN, "Your own GitHub token (Issues: read and write)"),
    ),
    // The list's buttons: open the chat on `@desk /show N`.
    vscode.commands.registerCommand(SHOW_COMMAND, (ticket: number) =>
      vscode.commands.executeCommand("workbench.action.chat.open", { query: `@desk /show ${ticket}` }),
    ),
    pendingCountItem(host),
  );
}

/** The status bar's pending count, kept fresh by the desk's event stream; a click lists them. */
function pendingCountItem(host: Host): vscode.Disposable {
  const item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 100);
  item.command = { title: "List pending tickets", command: "workbench.action.chat.open", arguments: [{ query: "@desk /list" }] };
  item.text = "$(inbox) desk";
  item.show();
  const stop = new PendingCount(host.settings, host.deskToken, (count, tooltip) => {
    item.text = count === null ? "$(inbox) desk ?" : `$(inbox) ${count}`;
    item.tooltip = tooltip;
  }).start();
  return { dispose: () => (stop(), item.dispose()) };
}

export function deactivate(): void {}

function readSettings(): DeskSettings {
  const config = vscode.workspace.getConfiguration("ticketproxy");
  return {
    deskUrl: config.get<string>("deskUrl", "http://127.0.0.1:8080"),
    githubHost: config.get<string>("githubHost", ""),
    githubApiUrl: config.get<string>("githubApiUrl", ""),
    keyPath: expandHome(config.get<string>("keyPath", "")),
    cliPath: config.get<string>("cliPath", "ticketproxy"),
  };
}

function expandHome(path: string): string {
  const home = process.env["HOME"] ?? process.env["USERPROFILE"];
  return path.startsWith("~/") && home ? home + path.slice(1) : path;
}

async function storeSecret(context: vscode.ExtensionContext, key: string, prompt: string): Promise<void> {
  const value = await vscode.window.showInputBox({ prompt, password: true, ignoreFocusOut: true });
  if (value === undefined) {
    return;
  }
  if (value === "") {
    await context.secrets.delete(key);
    void vscode.window.showInformationMessage("Removed.");
    return;
  }
  await context.secrets.store(key, value);
  void vscode.window.showInformationMessage("Stored in VS Code's secret storage.");
}
