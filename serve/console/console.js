// motet console: agents, their threads, a thread's transcript, a run streaming live, and the
// calls waiting for a person, over the native API (docs/serve.md). No framework, no build step.
//
// The token the person types is kept in sessionStorage (gone with the tab) and sent only in an
// Authorization header: never in a URL, never logged. That is why a run's stream is read with
// fetch() and a stream reader rather than EventSource, which cannot send headers. Every URL is
// taken relative to this script's, so the console works wherever its router is mounted. What
// the API returns is shown as text (textContent), never parsed as markup.
"use strict";

const BASE = new URL(".", document.currentScript.src);
const api = (path) => new URL(path, BASE);
const TOKEN_KEY = "motet.token";
const $ = (id) => document.getElementById(id);
const enc = encodeURIComponent;
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/** What the console looks at: the agent, the thread (null: a new one on the next ask), the run's stream. */
const state = { agent: null, thread: null, stream: null, locked: false };

/** An element with attributes (`on*`: listeners, `dataset`: data-*) and children (text or nodes). */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "class") node.className = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

function say(text, isError) {
  $("status").textContent = text;
  $("status").classList.toggle("error", Boolean(isError));
}


function headers(extra) {
  const all = Object.assign({}, extra);
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) all.Authorization = "Bearer " + token;
  return all;
}

/** An API answer that was not a success: an Error with the HTTP status. */
const failure = (status, message) => Object.assign(new Error(message), { status });

/** Calls the native API: `path` relative to the page; the JSON answer, or an ApiError. */
async function call(method, path, body) {
  const init = { method, cache: "no-store", headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(api(path), init);
  if (response.status === 401) {
    throw failure(401, "this server needs a token (or the one given is wrong): type it above");
  }
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { /* not JSON: the status says it */ }
  if (!response.ok) {
    const message = json && json.error && json.error.message;
    throw failure(response.status, message || `HTTP ${response.status}`);
  }
  return json;
}

/** Runs `work`, showing its failure in the status line. */
async function guarded(work) {
  try {
    return await work();
  } catch (error) {
    say(error.message, true);
    state.locked = error.status === 401;
    if (state.locked) $("token").focus();
    return undefined;
  }
}

// ---- agents and threads ----

async function loadAgents() {
  const listed = await guarded(() => call("GET", "api/agents"));
  if (!listed) return;
  state.locked = false;
  say(`${listed.agents.length} agent(s)`);
  const list = $("agents");
  list.replaceChildren(...listed.agents.map((agent) => el("li", {},
    el("button", {
      type: "button", dataset: { agent: agent.name }, class: agent.name === state.agent ? "selected" : "",
      onclick: () => selectAgent(agent.name),
    }, agent.name))));
  if (!listed.agents.length) list.append(el("li", { class: "empty" }, "none this token reaches"));
  await loadWaiting();
}

async function selectAgent(name) {
  state.agent = name;
  state.thread = null;
  mark("agents", "agent", name);
  $("ask").disabled = false;
  showThread();
  await loadThreads();
}

async function loadThreads() {
  if (!state.agent) return;
  const listed = await guarded(() => call("GET", `api/agents/${enc(state.agent)}/threads`));
  if (!listed) return;
  const threads = listed.threads.slice().sort((a, b) => b.updated_at - a.updated_at);
  $("threads").replaceChildren(...threads.map((thread) => el("li", {},
    el("button", {
      type: "button", dataset: { thread: thread.id }, title: thread.id,
      class: thread.id === state.thread ? "selected" : "", onclick: () => selectThread(thread.id),
    }, thread.id, el("small", {}, `${thread.entry_count} entries · ${when(thread.updated_at)}`)))));
  if (!threads.length) $("threads").append(el("li", { class: "empty" }, "no threads yet"));
}

const when = (ms) => (ms ? new Date(ms).toLocaleString() : "");

/** Marks the button of list `id` whose data-`key` is `value` as the one picked. */
function mark(id, key, value) {
  for (const button of $(id).querySelectorAll("button")) {
    button.classList.toggle("selected", button.dataset[key] === value);
  }
}

async function selectThread(id) {
  state.thread = id;
  mark("threads", "thread", id);
  showThread();
  await loadTranscript();
}

function showThread() {
  $("thread-title").textContent = state.thread
    ? `${state.agent} · ${state.thread}` : `${state.agent} · a new thread`;
  $("transcript").replaceChildren();
}

// ---- a thread's transcript ----

async function loadTranscript() {
  const { agent, thread } = state;
  if (!agent || !thread) return;
  const listed = await guarded(() =>
    call("GET", `api/agents/${enc(agent)}/threads/${enc(thread)}/entries`));
  if (!listed || state.agent !== agent || state.thread !== thread) return;
  // Added to what a run's events showed already (entries are only ever appended).
  for (const entry of listed.entries) addEntry(entry);
}

/** Adds one entry to the transcript, once (a run's `entry` events and a reload may both bring it). */
function addEntry(entry) {
  const shown = describe(entry);
  if (!shown || $("transcript").querySelector(`li[data-seq="${Number(entry.seq)}"]`)) return;
  const item = el("li", { class: entry.kind, dataset: { seq: String(entry.seq) } },
    el("span", { class: "who" }, shown.who), shown.text);
  const later = [...$("transcript").children].find((li) => Number(li.dataset.seq) > entry.seq);
  $("transcript").insertBefore(item, later || null);
}

/** Who wrote an entry and its text; null for an entry kept for the machine only. */
function describe(entry) {
  const payload = entry.payload || {};
  switch (entry.kind) {
    case "user": return { who: "user", text: textOf(payload.content) };
    case "system": return { who: "system", text: payload.content };
    case "assistant": {
      const blocks = (payload.message && payload.message.blocks) || [];
      const parts = blocks.map((block) => {
        if (block.block_type === "text") return block.text;
        if (block.block_type === "tool_use") return `→ ${block.name}(${argsText(block.args)})`;
        return null;
      }).filter((part) => part);
      return { who: "assistant", text: parts.join("\n") };
    }
    case "tool_result": {
      const result = payload.result || {};
      return { who: `${payload.name}${result.is_error ? " failed" : ""}`, text: result.content };
    }
    case "summary": return { who: "summary", text: payload.content };
    case "note": return { who: "note", text: payload.text };
    case "error": return { who: "error", text: payload.message };
    default: return null;
  }
}

function textOf(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return JSON.stringify(content);
  return content.map((part) => (typeof part.text === "string" ? part.text : `[${part.type || "part"}]`)).join("\n");
}

const argsText = (args) => (typeof args === "string" ? args : JSON.stringify(args));

// ---- a run, streamed ----

async function ask(event) {
  event.preventDefault();
  const query = $("query").value.trim();
  if (!state.agent || !query) return;
  const agent = state.agent;
  const thread = state.thread || "new";
  const run = await guarded(() =>
    call("POST", `api/agents/${enc(agent)}/threads/${enc(thread)}/runs`, { query }));
  if (!run) return;
  $("query").value = "";
  if (state.thread !== run.thread) {
    state.thread = run.thread;
    showThread();
  }
  say(`run ${run.id} started`);
  loadThreads();
  loadTranscript();
  watch(run);
}

/**
 * Reads the run's events (SSE over fetch, with the token in a header) until its answer or
 * failure; a stream that drops is resumed with Last-Event-ID, so nothing is shown twice.
 */
async function watch(run) {
  if (state.stream) state.stream.abort();
  const stop = new AbortController();
  state.stream = stop;
  $("run").hidden = false;
  $("live").replaceChildren();
  $("live").dataset.deltas = "0";
  $("answer").textContent = "";
  runStatus(run, "running");
  let last = 0;
  let drops = 0;
  while (!stop.signal.aborted) {
    let ended = false;
    try {
      const extra = { Accept: "text/event-stream" };
      if (last) extra["Last-Event-ID"] = String(last);
      const response = await fetch(api(`api/agents/${enc(run.agent)}/runs/${enc(run.id)}/events`),
        { headers: headers(extra), cache: "no-store", signal: stop.signal });
      if (!response.ok) throw failure(response.status, `the run's stream: HTTP ${response.status}`);
      if (last) runStatus(run, `resumed after event ${last}`);
      for await (const event of sse(response.body)) {
        if (event.id) last = Number(event.id);
        drops = 0;
        ended = onEvent(run, event) || ended;
      }
    } catch (error) {
      if (stop.signal.aborted) return;
      if (error.status === 400 || error.status === 401 || error.status === 404) {
        say(error.message, true);
        return;
      }
    }
    if (ended) return;
    drops += 1;
    if (drops > 8) {
      say("the run's stream keeps dropping: reload to try again", true);
      return;
    }
    runStatus(run, `reconnecting after event ${last}`);
    await sleep(500 * drops);
  }
}

/** The events of an SSE body, each `{id, event, data}`. */
async function* sse(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = parseEvent(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (event) yield event;
    }
  }
}

/** One SSE event block; null for a comment (a keep-alive). */
function parseEvent(block) {
  const event = { id: null, event: "message", data: [] };
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") event.data.push(value);
    else if (field === "id") event.id = value;
    else if (field === "event") event.event = value;
  }
  if (!event.data.length && event.id === null) return null;
  return { id: event.id, event: event.event, data: event.data.join("\n") };
}

/** Shows one event of `run`; true when it is the run's last. */
function onEvent(run, event) {
  let data = null;
  try { data = JSON.parse(event.data); } catch { /* not JSON: shown as nothing */ }
  switch (event.event) {
    case "delta": showDelta(data); return false;
    case "entry":
      if (state.agent === run.agent && state.thread === run.thread && data) addEntry(data);
      return false;
    case "waiting": runStatus(run, "waiting for a person"); loadWaiting(); return false;
    case "gap": runStatus(run, "some text was written before this page looked: the transcript has it"); return false;
    case "answer": $("answer").textContent = data ? data.answer : ""; return finished(run, "completed");
    case "failed": return finished(run, `failed: ${data ? data.error : "?"}`);
    default: return false; // `shutdown`: the stream ends, and is resumed
  }
}

function finished(run, how) {
  runStatus(run, how);
  loadThreads();
  loadTranscript();
  loadWaiting();
  return true;
}

function runStatus(run, text) {
  $("run-status").textContent = `run ${run.id}: ${text}`;
}

/** Adds a fragment to its model call's span in the live text. */
function showDelta(delta) {
  if (!delta) return;
  const live = $("live");
  let span = [...live.children].find((node) => node.dataset.call === delta.call_id);
  if (delta.kind === "discard") {
    if (span) span.classList.add("discarded");
    return;
  }
  if (delta.kind !== "text") return; // reasoning stays out of the answer's text
  if (!span) {
    span = el("span", { class: "call", dataset: { call: delta.call_id } });
    live.append(span);
  }
  span.append(delta.delta);
  live.dataset.deltas = String(Number(live.dataset.deltas) + 1);
}

// ---- calls waiting for a person ----

async function loadWaiting() {
  const listed = await guarded(() => call("GET", "api/waiting"));
  if (!listed) return;
  const list = $("waiting");
  if (list.contains(document.activeElement)) return; // someone is typing: the next refresh catches up
  list.replaceChildren(...listed.waiting.map(waitingCard));
  if (!listed.waiting.length) list.append(el("li", { class: "empty" }, "nothing waits"));
}

function waitingCard(wait) {
  const pause = wait.pause || {};
  const where = el("p", { class: "where" }, `${wait.agent} · ${wait.thread} · since ${when(wait.since_ms)}`);
  if (pause.kind === "question") {
    const answer = el("input", { type: "text", class: "reply", placeholder: "your answer", "aria-label": "answer" });
    return el("li", { dataset: { call: wait.tool_call_id } },
      el("p", { class: "what" }, `${wait.tool} asks: ${pause.text}`), where, answer,
      el("div", { class: "actions" },
        el("button", { type: "button", class: "answer", onclick: () => respond(wait, { action: "answer", text: answer.value }) }, "Answer")));
  }
  const args = el("textarea", { class: "args", rows: "3", "aria-label": "arguments" });
  args.value = prettyArgs(wait.args);
  const reason = el("input", { type: "text", class: "reason", placeholder: "why not (for reject)", "aria-label": "reason" });
  const edit = () => {
    let parsed;
    try { parsed = JSON.parse(args.value); } catch (error) {
      say(`the edited arguments are not JSON: ${error.message}`, true);
      return;
    }
    respond(wait, { action: "edit", args: parsed });
  };
  return el("li", { dataset: { call: wait.tool_call_id } },
    el("p", { class: "what" }, `${wait.tool} needs approval`), where, args, reason,
    el("div", { class: "actions" },
      el("button", { type: "button", class: "approve", onclick: () => respond(wait, { action: "approve" }) }, "Approve"),
      el("button", { type: "button", class: "edit", onclick: edit }, "Run edited"),
      el("button", { type: "button", class: "reject",
        onclick: () => respond(wait, { action: "reject", reason: reason.value.trim() || "rejected from the console" }) }, "Reject")));
}

function prettyArgs(args) {
  if (typeof args !== "string") return JSON.stringify(args, null, 2);
  try { return JSON.stringify(JSON.parse(args), null, 2); } catch { return args; }
}

async function respond(wait, decision) {
  const done = await guarded(() => call("POST",
    `api/agents/${enc(wait.agent)}/threads/${enc(wait.thread)}/waiting/${enc(wait.tool_call_id)}`, decision));
  if (done === undefined) return;
  say(`${decision.action}: ${wait.tool} (${wait.tool_call_id})`);
  document.activeElement.blur();
  await loadWaiting();
}

// ---- start ----

function start() {
  $("token").value = sessionStorage.getItem(TOKEN_KEY) || "";
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token").value.trim();
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
    loadAgents();
  });
  $("forget-token").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    $("token").value = "";
    say("token forgotten");
  });
  $("new-thread").addEventListener("click", () => {
    if (!state.agent) return;
    state.thread = null;
    mark("threads", "thread", null);
    showThread();
    $("query").focus();
  });
  $("ask-form").addEventListener("submit", ask);
  loadAgents();
  // Waits can begin in runs this page did not start (another client's, a timer's).
  setInterval(() => { if (!state.locked) loadWaiting(); }, 3000);
}

start();
