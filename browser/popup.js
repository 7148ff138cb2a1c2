// The toolbar popup: the person types the intent; the page's URL, title and HTML go to
// readdod; the item's status shows until its card is ready.
"use strict";

const host = new HostPort();
const $ = (id) => document.getElementById(id);
const POLL_FIRST_MS = 500;
const POLL_MAX_MS = 3000;

function status(state, text) {
  const el = $("status");
  el.dataset.state = state;
  el.textContent = text;
}

// What to save: a link handed in (?url=, from the context menu), a tab named by ?tab=,
// or the tab the popup was opened on.
async function target() {
  const q = new URLSearchParams(location.search);
  if (q.get("url")) return { url: q.get("url"), title: q.get("title") || null, tabId: null };
  let tab;
  if (q.get("tab")) {
    tab = await chrome.tabs.get(Number(q.get("tab")));
  } else {
    [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  }
  if (!tab) throw new ReaddodError("NO_TAB", "no tab to save");
  return { url: tab.url || null, title: tab.title || null, tabId: tab.id };
}

// The page as the person sees it (behind a login or a bot wall too); null where the
// browser lets no extension read (its own pages, the web store).
async function pageHtml(tabId) {
  if (tabId === null) return null;
  try {
    const [done] = await chrome.scripting.executeScript({
      target: { tabId },
      func: () => document.documentElement.outerHTML,
    });
    return done && typeof done.result === "string" ? done.result : null;
  } catch (e) {
    return null;
  }
}

function showCard(got) {
  const card = got.artifacts && got.artifacts.card && got.artifacts.card.payload;
  const box = $("card");
  box.replaceChildren();
  if (!card) return;
  const title = document.createElement("strong");
  title.textContent = `${card.title} · ${card.priority} · ${card.match_score}/100`;
  const line = document.createElement("p");
  line.textContent = card.one_liner;
  const todos = document.createElement("ul");
  for (const todo of card.todos) {
    const li = document.createElement("li");
    li.textContent = todo.title;
    todos.append(li);
  }
  box.append(title, line, todos);
  box.hidden = false;
}

function describe(item) {
  if (item.failure) return `${item.status}: ${item.failure.error_code}: ${item.failure.message}`;
  if (item.status === "READY") return "READY: the card is ready";
  if (item.status === "CAPTURED") return "CAPTURED: saved; readdod processes it when asked";
  return `${item.status}…`;
}

async function follow(itemId) {
  let delay = POLL_FIRST_MS;
  for (;;) {
    let got;
    try {
      got = await host.call("get", { id: itemId });
    } catch (err) {
      if (err.code !== "PAYLOAD_TOO_LARGE") throw err;
      // The item is saved; it is only too large to come through the browser whole.
      status("saved", `Saved as ${itemId}; too large to show here: \`readdod show ${itemId}\``);
      return null;
    }
    status(got.item.status, describe(got.item));
    if (SETTLED.has(got.item.status)) {
      showCard(got);
      return got;
    }
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 1.5, POLL_MAX_MS);
  }
}

async function save(page, intent) {
  // readdod keeps a title of at most 500 characters.
  const params = { intent, url: page.url, title: page.title && page.title.slice(0, 500) };
  const html = await pageHtml(page.tabId);
  if (html !== null) params.html = html;
  for (const key of Object.keys(params)) if (params[key] === null) delete params[key];
  status("sending", "Saving…");
  let res;
  try {
    res = await host.call("capture", params);
  } catch (err) {
    if (err.code !== "PAYLOAD_TOO_LARGE" || !("html" in params)) throw err;
    // The page is larger than readdod takes: let it fetch the page itself.
    delete params.html;
    status("sending", "The page is too large to hand over; readdod fetches it itself…");
    res = await host.call("capture", params);
  }
  await rememberIntent(intent);
  status(res.item.status, (res.created ? "" : "Already saved. ") + describe(res.item));
  return follow(res.item.id);
}

async function main() {
  const page = await target();
  $("page").textContent = page.title ? `${page.title} — ${page.url}` : page.url || "";
  const recent = await recentIntents();
  for (const intent of recent) {
    const opt = document.createElement("option");
    opt.value = intent;
    $("recent-list").append(opt);
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = intent;
    button.addEventListener("click", () => { $("intent").value = intent; $("intent").focus(); });
    $("recent").append(button);
  }
  $("form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const intent = $("intent").value.trim();
    if (!intent) return;
    $("capture").disabled = true;
    try {
      await save(page, intent);
    } catch (err) {
      status("error", `${err.code || "ERROR"}: ${err.message}`);
      $("capture").disabled = false;
    }
  });
  document.body.dataset.ready = "1";
}

main().catch((err) => status("error", `${err.code || "ERROR"}: ${err.message}`));
