// The agent's messages as GitHub-flavoured markdown (bold, tables, code), made harmless.
// markdown-it renders with raw HTML off (a tag in agent text stays text) and images as inert
// text; DOMPurify then sanitises what remains, so no script, no handler and no remote
// resource reaches the page. Both are vendored under /desk/vendor/ (see vendor/README.md).
"use strict";

const MARKDOWN = markdownit({ html: false, linkify: true });
// An image in agent text would be fetched from wherever the agent says: shown as text instead.
MARKDOWN.renderer.rules.image = (tokens, index) => {
  const token = tokens[index];
  const escape = MARKDOWN.utils.escapeHtml;
  const alt = token.children ? token.children.map((child) => child.content).join("") : "";
  return `<span class="inert-image">[image not loaded: ${escape(alt)} ${escape(token.attrGet("src") || "")}]</span>`;
};
const SAFE_HREF = /^(https?:|mailto:|#)/i;
// Runs in DOMPurify's inert document, before anything reaches this page's DOM.
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName !== "A") return;
  if (!SAFE_HREF.test(node.getAttribute("href") || "")) node.removeAttribute("href");
  node.setAttribute("target", "_blank");
  node.setAttribute("rel", "noopener noreferrer nofollow");
});
const PURIFY_OPTIONS = {
  RETURN_DOM_FRAGMENT: true,
  FORBID_TAGS: ["img", "picture", "video", "audio", "source", "style", "form", "input",
                "button", "textarea", "select", "iframe", "object", "embed", "svg", "math"],
  FORBID_ATTR: ["style", "id", "name", "srcset"],
};

// Return `text` rendered and sanitised, as a fragment to append.
function renderMarkdown(text) {
  return DOMPurify.sanitize(MARKDOWN.render(text || ""), PURIFY_OPTIONS);
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// One message: who said it, its text rendered, and the tool calls it made or answers.
function messageElement(message) {
  const article = element("article", "message");
  const who = message.name ? `${message.role} (${message.name})` : message.role;
  const head = element("header", "message-role", who);
  if (message.tool_call_id) head.append(element("span", "state", ` result of call ${message.tool_call_id}`));
  article.append(head);
  const body = element("div", "markdown-body");
  body.append(renderMarkdown(message.content || ""));
  article.append(body);
  for (const call of message.tool_calls || []) {
    const pre = element("pre", "tool-call");
    pre.textContent = `${call.name} ${typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments)}`;
    article.append(pre);
  }
  return article;
}
