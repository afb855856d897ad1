// The answer form: for a tool call, one field per argument of the tool's JSON Schema.
// The form writes the answer text the answer template asks for (ticketing/render/templates.py):
// any text first, then a blank line and a `tool_call` block holding {"name", "arguments"}
// as indented JSON, fenced by more backticks than any run inside. The release parser
// (ticketing/release/) reads exactly that; the form checks types, enums and required
// arguments before anything is signed.
"use strict";

function longestBacktickRun(text) {
  return Math.max(0, ...(text.match(/`+/g) || []).map((run) => run.length));
}

function toolCallBlock(name, args) {
  const json = JSON.stringify({ name, arguments: args }, null, 2);
  const fence = "`".repeat(Math.max(3, longestBacktickRun(json) + 1));
  return `${fence}tool_call\n${json}\n${fence}`;
}

// Split an answer template into its text part and the tool its `tool_call` block calls.
function templateCall(template) {
  const match = /(^|\n)(`{3,})tool_call\n([\s\S]*?)\n\2(?=\n|$)/.exec(template || "");
  if (!match) return null;
  let call;
  try {
    call = JSON.parse(match[3]);
  } catch (e) {
    return null;
  }
  const text = template.slice(0, match.index) + template.slice(match.index + match[0].length);
  return { tool: call.name, text: text.trim() };
}

// The JSON Schema type a field edits: the first one besides null.
function schemaType(schema) {
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  return types.find((type) => type && type !== "null") || (schema.enum ? "enum" : "json");
}

function fieldControl(name, schema) {
  const type = schemaType(schema);
  let control;
  if (Array.isArray(schema.enum)) {
    control = document.createElement("select");
    control.append(new Option("(not given)", ""));
    schema.enum.forEach((value, index) => {
      control.append(new Option(typeof value === "string" ? value : JSON.stringify(value), String(index)));
    });
  } else if (type === "boolean") {
    control = document.createElement("select");
    for (const [label, value] of [["(not given)", ""], ["true", "true"], ["false", "false"]]) {
      control.append(new Option(label, value));
    }
  } else if (type === "integer" || type === "number") {
    control = document.createElement("input");
    control.type = "number";
    control.step = type === "integer" ? "1" : "any";
  } else {
    control = document.createElement("textarea");
    control.rows = type === "string" ? 2 : 3;
    if (type !== "string") control.placeholder = `JSON ${type}`;
  }
  control.dataset.field = name;
  return control;
}

// Read one field: {value} when given, {} when empty, {error} when it cannot be used.
function readField(control, schema) {
  const raw = control.value;
  if (raw === "") return {};
  const type = schemaType(schema);
  if (Array.isArray(schema.enum)) return { value: schema.enum[Number(raw)] };
  if (type === "boolean") return { value: raw === "true" };
  if (type === "string") return { value: raw };
  if (type === "integer" || type === "number") {
    const value = Number(raw);
    if (!Number.isFinite(value)) return { error: "is not a number" };
    if (type === "integer" && !Number.isInteger(value)) return { error: "must be a whole number" };
    if (typeof schema.minimum === "number" && value < schema.minimum) return { error: `must be at least ${schema.minimum}` };
    if (typeof schema.maximum === "number" && value > schema.maximum) return { error: `must be at most ${schema.maximum}` };
    return { value };
  }
  let value;
  try {
    value = JSON.parse(raw);
  } catch (e) {
    return { error: "is not JSON" };
  }
  const kind = Array.isArray(value) ? "array" : value === null ? "null" : typeof value;
  if (type !== "json" && kind !== type) return { error: `must be a JSON ${type}` };
  return { value };
}

// Build the form in `container` for `tools`; `changed()` is called on every edit.
function buildToolForm(container, tools, template, changed) {
  container.replaceChildren();
  const call = templateCall(template);
  if (!call || !tools.length) return null;
  const legend = element("legend", null, "Answer with a tool call");
  const picker = document.createElement("select");
  picker.id = "tool-name";
  for (const tool of tools) picker.append(new Option(tool.name, tool.name));
  if (tools.some((tool) => tool.name === call.tool)) picker.value = call.tool;
  const pickerLabel = element("label", null, "Tool ");
  pickerLabel.append(picker);
  const description = element("p", "state");
  const fields = element("div", "tool-fields");
  const text = document.createElement("textarea");
  text.id = "tool-text";
  text.value = call.text;
  const textLabel = element("label", null, "Text beside the call (optional)");
  textLabel.append(text);
  container.append(legend, pickerLabel, description, fields, textLabel);
  let controls = [];

  function showTool() {
    const tool = tools.find((t) => t.name === picker.value);
    const schema = tool.parameters || {};
    const required = new Set(schema.required || []);
    description.textContent = tool.description || "";
    controls = Object.entries(schema.properties || {}).map(([name, property]) => {
      const control = fieldControl(name, property || {});
      const label = element("label", "field", `${name}${required.has(name) ? " *" : ""} `);
      label.append(element("span", "state", property.description || schemaType(property || {})));
      label.append(control, element("span", "field-error"));
      fields.append(label);
      return { name, schema: property || {}, control, required: required.has(name), label };
    });
  }

  // Problems are shown beside the fields once signing was tried, not while the form is new.
  let tried = false;
  function read() {
    const args = {};
    const errors = [];
    for (const field of controls) {
      const { value, error } = readField(field.control, field.schema);
      const problem = error || (value === undefined && field.required ? "is required" : "");
      field.label.querySelector(".field-error").textContent = problem && tried ? ` ${problem}` : "";
      if (problem) errors.push(`${field.name} ${problem}`);
      else if (value !== undefined) args[field.name] = value;
    }
    return { args, errors };
  }

  picker.addEventListener("change", () => { fields.replaceChildren(); showTool(); changed(); });
  container.addEventListener("input", changed);
  container.addEventListener("change", changed);
  showTool();
  return {
    // The answer the form makes now, and what stops it from being signed.
    answer({ signing = false } = {}) {
      tried = tried || signing;
      const { args, errors } = read();
      return { text: [text.value.trim(), toolCallBlock(picker.value, args)].filter(Boolean).join("\n\n"), errors };
    },
  };
}
