// Live refresh: follow the desk API's server-sent events (GET /desk/api/v1/events).
// Read with fetch, not EventSource, so the desk token goes in the Authorization header
// rather than the address. Events are hints: the page re-reads what they name.
"use strict";

function parseEventBlock(block) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") name = value;
    else if (field === "data") data.push(value);
  }
  return data.length ? { name, data: data.join("\n") } : null;
}

// Follow the stream for as long as the page lives; reconnect two seconds after it drops.
// `onOpen(true)` on each (re)connection, when anything missed must be re-read.
async function followEvents(headers, onEvent, onOpen) {
  for (;;) {
    try {
      const response = await fetch("/desk/api/v1/events", { headers, cache: "no-store" });
      if (!response.ok || !response.body) throw new Error(`events: HTTP ${response.status}`);
      onOpen(true);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer = (buffer + value).replace(/\r\n/g, "\n");
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const event = parseEventBlock(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          if (event) onEvent(event.name, JSON.parse(event.data));
        }
      }
    } catch (e) {
      // Dropped or refused: said by the indicator, tried again below.
    }
    onOpen(false);
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}
